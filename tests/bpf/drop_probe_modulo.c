// SPDX-License-Identifier: Apache-2.0
/*
 * Test impairment with an effect known in advance: on the port it is attached to (tc ingress),
 * drops every frerlab data probe (UDP to port 5555, probe kind 'D') whose sequence number is
 * 3 modulo 10, and passes everything else. Used by tests/test_traffic_impairment.py.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define PROBE_PORT 5555
#define PROBE_MAGIC 0xFB
#define PROBE_KIND_DATA 0x44

struct probe_head {
	__u8 magic;
	__u8 kind;
	__be16 stream;
	__be64 seq;
} __attribute__((packed));

SEC("tc")
int drop_probe_modulo(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP)
		return TC_ACT_OK;
	struct udphdr *udp = (void *)(ip + 1);
	struct probe_head *probe = (void *)(udp + 1);
	if ((void *)(probe + 1) > end || udp->dest != bpf_htons(PROBE_PORT) ||
	    probe->magic != PROBE_MAGIC || probe->kind != PROBE_KIND_DATA)
		return TC_ACT_OK;
	return bpf_be64_to_cpu(probe->seq) % 10 == 3 ? TC_ACT_SHOT : TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
