// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * The baselines the data plane is measured against: plain tc redirects with no FRER (no
 * sequence numbers, no R-TAG, no recovery). A frame received on a port whose ifindex is a key
 * of `redirect_to` leaves through the port stored there; other frames go to the kernel.
 * plain_copy first sends a copy to the port in `copy_to` (a plain two-path split);
 * plain_drop drops every frame (the second path's copies at the merging switch).
 * xdp_plain_redirect is plain_redirect in XDP; xdp_pass lets every frame up (on a veth whose
 * peer redirects into it in native XDP mode, the receiving end needs an XDP program).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

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
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
