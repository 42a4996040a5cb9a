// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * The baseline the data plane is measured against: a plain tc redirect with no FRER. Each
 * frame received on a port whose ifindex is a key of `redirect_to` leaves through the port
 * stored there; other frames go to the kernel.
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

SEC("tc")
int plain_redirect(struct __sk_buff *skb)
{
	__u32 in = skb->ingress_ifindex;
	__u32 *out = bpf_map_lookup_elem(&redirect_to, &in);

	return out ? bpf_redirect(*out, 0) : TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
