// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * The baselines the data plane is measured against: plain tc redirects with no FRER (no
 * sequence numbers, no R-TAG, no recovery). A frame received on a port whose ifindex is a key
 * of `redirect_to` leaves through the port stored there; other frames go to the kernel.
 * plain_copy first sends a copy to the port in `copy_to` (a plain two-path split);
 * plain_drop drops every frame (the second path's copies at the merging switch).
 * xdp_plain_redirect is plain_redirect in XDP; xdp_plain_copy sends one copy of every frame to
 * each port of `xdp_copy_ports` (one broadcast redirect, as frer_xdp sends a stream's copies);
 * xdp_plain_drop is plain_drop in XDP; xdp_pass lets every frame up (on a veth whose
 * peer redirects into it in native XDP mode, the receiving end needs an XDP program).
 * spread_ports and unspread_ports spread one UDP flow over many streams and gather it again
 * (the scaling benchmark's and test's talker and listener): see struct spread.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);   /* ingress ifindex */
	__type(value, __u32); /* egress ifindex */
} redirect_to SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);   /* ingress ifindex */
	__type(value, __u32); /* ifindex that gets a copy first */
} copy_to SEC(".maps");

/* the ports xdp_plain_copy sends a copy to (ifindex -> ifindex) */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} xdp_copy_ports SEC(".maps");

static __always_inline int forward(struct __sk_buff *skb)
{
	__u32 in = skb->ingress_ifindex;
	__u32 *out = bpf_map_lookup_elem(&redirect_to, &in);

	return out ? bpf_redirect(*out, 0) : TC_ACT_OK;
}

SEC("tc")
int plain_redirect(struct __sk_buff *skb)
{
	return forward(skb);
}

SEC("tc")
int plain_copy(struct __sk_buff *skb)
{
	__u32 in = skb->ingress_ifindex;
	__u32 *copy = bpf_map_lookup_elem(&copy_to, &in);

	if (copy)
		bpf_clone_redirect(skb, *copy, 0);
	return forward(skb);
}

SEC("tc")
int plain_drop(struct __sk_buff *skb)
{
	return TC_ACT_SHOT;
}

SEC("xdp")
int xdp_plain_redirect(struct xdp_md *ctx)
{
	__u32 in = ctx->ingress_ifindex;
	__u32 *out = bpf_map_lookup_elem(&redirect_to, &in);

	return out ? bpf_redirect(*out, 0) : XDP_PASS;
}

SEC("xdp")
int xdp_plain_copy(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xdp_copy_ports, 0, BPF_F_BROADCAST | XDP_DROP);
}

SEC("xdp")
int xdp_plain_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/* Spreading, map `spread` (one entry): spread_ports (tc egress of the talker) gives the k-th
 * IPv4 UDP frame it sees (no IP options, no VLAN tag) the source port sport + (k mod n) / 256
 * and the destination port dport + (k mod n) % 256, so n streams identified by their ports
 * take the frames in turn; unspread_ports (tc ingress of the listener) gives every such frame
 * the destination port restore, the receiver's. The UDP checksum follows each change. */
struct spread {
	__u32 n;        /* streams; 0: frames pass unchanged */
	__u32 next;     /* k of the next frame */
	__u16 sport;
	__u16 dport;
	__u16 restore;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spread);
} spread SEC(".maps");

#define UDP4_SPORT 34 /* Ethernet 14 + IPv4 20 */
#define UDP4_DPORT 36
#define UDP4_CHECK 40

static __always_inline struct spread *spread_of_udp4(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct spread *sp = bpf_map_lookup_elem(&spread, &zero);
	__u8 h[24];

	if (!sp || !sp->n || bpf_skb_load_bytes(skb, 0, h, sizeof(h)))
		return 0;
	if (h[12] != 0x08 || h[13] != 0x00 || h[14] != 0x45 || h[23] != 17)
		return 0;
	return sp;
}

static __always_inline void set_port(struct __sk_buff *skb, __u32 off, __u16 port)
{
	__be16 old, new = bpf_htons(port);

	if (bpf_skb_load_bytes(skb, off, &old, 2) ||
	    bpf_l4_csum_replace(skb, UDP4_CHECK, old, new, BPF_F_MARK_MANGLED_0 | 2))
		return;
	bpf_skb_store_bytes(skb, off, &new, 2, 0);
}

SEC("tc")
int spread_ports(struct __sk_buff *skb)
{
	struct spread *sp = spread_of_udp4(skb);
	__u32 k;

	if (!sp)
		return TC_ACT_OK;
	k = __sync_fetch_and_add(&sp->next, 1) % sp->n;
	set_port(skb, UDP4_SPORT, sp->sport + k / 256);
	set_port(skb, UDP4_DPORT, sp->dport + k % 256);
	return TC_ACT_OK;
}

SEC("tc")
int unspread_ports(struct __sk_buff *skb)
{
	struct spread *sp = spread_of_udp4(skb);

	if (sp)
		set_port(skb, UDP4_DPORT, sp->restore);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
