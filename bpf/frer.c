// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * frerlab eBPF data plane: IEEE 802.1CB FRER as tc (clsact, direct-action) programs.
 *
 * frer_ingress runs on every port of a node for received frames; frer_egress on ports where
 * the host itself sends a stream (talker end-station). For each frame: parse (Ethernet, VLAN
 * in the frame or in skb metadata, R-TAG, IPv4/IPv6, ports), identify the stream, then do
 * what the node's `frer_stream` entry says: the stream's filter and flow meter on the port
 * (802.1Qci, received frames), sequence generation, individual recovery on the member port,
 * sequence recovery of the compound stream, R-TAG push or pop, and one copy per output port
 * (each with its own destination MAC / VID if configured). Frames of no stream
 * are plain-forwarded by a small learning bridge over the configured bridge ports, or left
 * to the kernel. Malformed frames are counted and dropped, never forwarded as stream frames.
 * The recovery algorithms mirror crates/frer (the reference): see the shared test vectors.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "frer_common.h"

/* ---- frame surgery ---- */

/* Insert an R-TAG with seq at f->l2_end: the front grows by the tag, and the MACs and any
 * in-frame VLAN tags, followed by the tag (EtherType F1C1, reserved 0, sequence number), are
 * written there in one store; the original EtherType follows. */
static __always_inline int rtag_push(struct __sk_buff *skb, const struct frame *f, __u16 seq)
{
	__u8 head[20 + FRER_RTAG_LEN] = {};

	if (f->l2_end != 12 && f->l2_end != 16 && f->l2_end != 20)
		return -1;
	if (bpf_skb_change_head(skb, FRER_RTAG_LEN, 0))
		return -1;
	if (f->l2_end == 12) {
		frer_tagged_head(head, f, seq, 12);
		return bpf_skb_store_bytes(skb, 0, head, 12 + FRER_RTAG_LEN, 0);
	}
	if (f->l2_end == 16) {
		frer_tagged_head(head, f, seq, 16);
		return bpf_skb_store_bytes(skb, 0, head, 16 + FRER_RTAG_LEN, 0);
	}
	frer_tagged_head(head, f, seq, 20);
	return bpf_skb_store_bytes(skb, 0, head, 20 + FRER_RTAG_LEN, 0);
}

/* A VLAN tag as skb metadata holds it (the VLAN helpers' arguments). */
struct vlan_tag {
	__be16 proto;
	__u16 tci;
};

/* Remove the R-TAG at f->l2_end. The bytes are taken from the front of the frame, as the
 * kernel removes a VLAN tag: what comes before the R-TAG moves up, what comes after it stays
 * where it is in memory. So the checksum offload offsets of a CHECKSUM_PARTIAL skb (csum_start
 * counts from skb->head) stay right, and skb->protocol becomes the EtherType after the tag.
 * Only the VLAN helpers set skb->protocol from the frame, and bpf_skb_adjust_room removes
 * bytes at the front of IP frames only, hence four steps:
 * 1. the R-TAG's EtherType becomes the one after it (IPv4's, for now, if that is not IP);
 * 2. every VLAN tag leaves the frame: a dummy tag pushed into skb metadata moves the outer tag
 *    into the frame and makes skb->protocol a VLAN type; each pop then drops the tag in
 *    metadata and moves the frame's next one there, skb->protocol the EtherType after it;
 * 3. the reserved field, sequence number and second EtherType (6 bytes after the Ethernet
 *    header) go with bpf_skb_adjust_room;
 * 4. a non-IP frame gets its EtherType back (and skb->protocol with one more push and pop),
 *    and the real tags the pops dropped from metadata are pushed back, innermost first.
 * The frame is the same on the wire as before but for the R-TAG; without a tag in metadata to
 * begin with, its first in-frame tag may end up there (the kernel's own form on receive).
 * l2: f->l2_end; etype: the EtherType after the R-TAG (host order). Returns 0 or -1 (the frame
 * is then half-way: drop it). A global function, so the verifier checks it once on its own. */
__attribute__((noinline)) int frer_rtag_pop(struct __sk_buff *skb, __u32 l2, __u32 etype)
{
	__u32 in_frame = (l2 - 12) / 4;
	int ip = etype == ETH_P_IP || etype == ETH_P_IPV6, in_metadata = skb->vlan_present;
	__be16 etype_be = bpf_htons(etype), step = ip ? etype_be : bpf_htons(ETH_P_IP);
	struct vlan_tag outer = {}, first = {}; /* what pops 2 and 3 drop from metadata */

	if (l2 != 12 && l2 != 16 && l2 != 20)
		return -1;
	if (bpf_skb_store_bytes(skb, l2, &step, 2, 0))
		return -1;
	if (!in_metadata && bpf_skb_vlan_push(skb, ETH_P_8021Q_BE, 0))
		return -1;
	if (bpf_skb_vlan_push(skb, ETH_P_8021Q_BE, 0))
		return -1;
	if (bpf_skb_vlan_pop(skb))
		return -1;
	if (in_frame >= 1) {
		outer.proto = skb->vlan_proto;
		outer.tci = skb->vlan_tci;
		if (bpf_skb_vlan_pop(skb))
			return -1;
	}
	if (in_frame == 2) {
		first.proto = skb->vlan_proto;
		first.tci = skb->vlan_tci;
		if (bpf_skb_vlan_pop(skb))
			return -1;
	}
	if (skb->protocol != step ||
	    bpf_skb_adjust_room(skb, -FRER_RTAG_LEN, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_NO_CSUM_RESET))
		return -1;
	if (!ip && (bpf_skb_store_bytes(skb, 12, &etype_be, 2, 0) ||
		    bpf_skb_vlan_push(skb, ETH_P_8021Q_BE, 0) || bpf_skb_vlan_pop(skb)))
		return -1;
	if (in_frame == 2 && bpf_skb_vlan_push(skb, first.proto, first.tci))
		return -1;
	if (in_frame >= 1 && in_metadata && bpf_skb_vlan_push(skb, outer.proto, outer.tci))
		return -1;
	if (in_frame == 0 && !in_metadata && bpf_skb_vlan_pop(skb))
		return -1;
	return 0;
}

/* Remove the R-TAG at f->l2_end (frer_rtag_pop). */
static __always_inline int rtag_pop(struct __sk_buff *skb, const struct frame *f)
{
	return frer_rtag_pop(skb, f->l2_end, hdr_u16(f, f->l2_end + FRER_RTAG_LEN));
}

/* The destination MAC and VLAN a frame had before any copy was rewritten. */
struct l2_original {
	__u8 dmac[6];
	__u8 vlan;       /* a VLAN tag in skb metadata */
	__u16 tci;       /* its TCI */
	int pcp;         /* the PCP of the outer tag, in metadata or in the frame; -1: untagged */
	__u32 priority;  /* skb->priority */
};

/* Give this copy its own destination MAC / VID / PCP (active stream identification), or the
 * original ones back if an earlier copy changed them. */
static __always_inline int output_rewrite(struct __sk_buff *skb, const struct frer_output *o,
					  const struct l2_original *orig, int *dirty)
{
	if (o->flags & FRER_OUT_SET_DMAC) {
		if (bpf_skb_store_bytes(skb, 0, o->dmac, 6, 0))
			return -1;
		*dirty = 1;
	} else if (*dirty && bpf_skb_store_bytes(skb, 0, orig->dmac, 6, 0)) {
		return -1;
	}
	if (o->flags & FRER_OUT_SET_VID) {
		__u16 tci = (__u16)copy_pcp(o, orig->pcp, orig->priority) << 13 | (o->vid & 0x0fff);

		if (skb->vlan_present && bpf_skb_vlan_pop(skb))
			return -1;
		if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), tci))
			return -1;
		*dirty = 1;
	} else if (*dirty) {
		if (skb->vlan_present && bpf_skb_vlan_pop(skb))
			return -1;
		if (orig->vlan && bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), orig->tci))
			return -1;
	}
	return 0;
}

/* Send the stream's copies; returns the tc verdict for the original skb. A copy leaving a port
 * with a sequence recovery function of the stream goes through it first. The last copy goes
 * up to the stack (FRER_OUT_LOCAL on ingress; once more through the port's ingress if its
 * R-TAG was removed, because the kernel still takes it for an R-TAG frame) or, for a frame the
 * host sends, out of the port it was sent to when that is its output port. A copy is counted
 * as output once it was handed to the port (the last one: once redirected). Each copy's
 * skb->priority is the PCP of the VLAN tag it leaves with, so a qdisc on the output port
 * (mqprio, taprio, CBS, HTB by priority) sees its traffic class; an untagged copy keeps the
 * frame's priority. */
static __always_inline int send_copies(struct __sk_buff *skb, const struct frame *f,
				       const struct frer_stream *st, __u32 stream,
				       struct frer_port_stats *ps, __u8 direction, int popped,
				       const struct recovery_ctx *rc)
{
	__u32 n = st->n_outputs;
	struct l2_original orig = { .vlan = skb->vlan_present, .tci = skb->vlan_tci,
				    .pcp = f->vlan ? f->pcp : -1, .priority = skb->priority };
	int dirty = 0;

	if (n == 0 || n > FRER_MAX_OUTPUTS)
		return TC_ACT_SHOT;
	__builtin_memcpy(orig.dmac, f->hdr, 6);
	for (__u32 i = 0; i < FRER_MAX_OUTPUTS; i++) {
		if (i >= n)
			break;
		const struct frer_output *o = &st->out[i];
		__u32 out_port = o->port % FRER_MAX_PORTS;
		int local = o->flags & FRER_OUT_LOCAL;
		struct frer_stream_port_stats *sp = local ? 0 : sp_stats_of(stream, out_port);
		int last = i + 1 == n, pcp;

		if (!local && frer_output_discards(st, out_port, rc)) {
			if (last)
				return TC_ACT_SHOT;
			continue;
		}
		if (output_rewrite(skb, o, &orig, &dirty)) {
			ps->tx_errors++;
			continue;
		}
		pcp = copy_pcp(o, orig.pcp, orig.priority);
		skb->priority = pcp >= 0 ? pcp : orig.priority;
		if (last) {
			if (sp)
				sp->output++;
			if (local && direction == FRER_DIR_INGRESS && popped) {
				skb->mark |= FRER_MARK_REINJECTED;
				return bpf_redirect(skb->ifindex, BPF_F_INGRESS);
			}
			if (local || (direction == FRER_DIR_EGRESS && o->ifindex == skb->ifindex))
				return TC_ACT_OK;
			return bpf_redirect(o->ifindex, 0);
		}
		if (bpf_clone_redirect(skb, o->ifindex, 0))
			ps->tx_errors++;
		else if (sp)
			sp->output++;
	}
	return TC_ACT_SHOT;
}

/* Frames of no stream: learning bridge over the bridge ports, or the kernel. */
static __always_inline int plain_forward(struct __sk_buff *skb, const struct frer_settings *s,
					 const struct frame *f, __u32 port,
					 struct frer_port_stats *ps)
{
	__u32 out = 0;

	switch (bridge_lookup(s, f, port, ps, &out)) {
	case BRIDGE_STACK:
		return TC_ACT_OK;
	case BRIDGE_DROP:
		return TC_ACT_SHOT;
	case BRIDGE_UNICAST:
		return bpf_redirect(out, 0);
	case BRIDGE_FLOOD:
		break;
	}
	for (__u32 p = 0; p < FRER_MAX_PORTS; p++) {
		__u32 key = p; /* p itself stays in a register, where the verifier sees it grow */
		__u32 *ifindex;

		if (p == port || !(s->bridge_ports & (1u << p)))
			continue;
		ifindex = bpf_map_lookup_elem(&ifindex_of_port, &key);
		if (ifindex && bpf_clone_redirect(skb, *ifindex, 0))
			ps->tx_errors++;
	}
	return TC_ACT_SHOT;
}

/* The whole per-frame path of a port, for frames received (ingress) or sent (egress). */
static __always_inline int frer_frame(struct __sk_buff *skb, __u32 ifindex, __u8 direction)
{
	__u32 zero = 0;
	struct frer_settings *s = bpf_map_lookup_elem(&settings, &zero);
	int port_i = port_of(ifindex);
	struct frame *f = bpf_map_lookup_elem(&scratch, &zero);
	struct frer_port_stats *ps;
	struct frer_stream *st;
	struct frer_stream_port_stats *sp;
	__u32 port, stream, len = skb->len;
	int sid, popped = 0;
	struct recovery_ctx rc = {};

	if (!s || port_i < 0 || !f)
		return TC_ACT_OK;
	port = port_i;
	ps = port_stats_of(port);
	if (!ps)
		return TC_ACT_OK;
	if (direction == FRER_DIR_INGRESS && (skb->mark & FRER_MARK_REINJECTED)) {
		skb->mark &= ~FRER_MARK_REINJECTED;
		ps->reinjected++;
		return TC_ACT_OK;
	}
	ps->frames++;
	if (len < ETH_HLEN ||
	    bpf_skb_load_bytes(skb, 0, f->hdr, (len > HDR_MAX ? HDR_MAX : len) & (HDR_MAX * 2 - 1)) < 0 ||
	    frame_parse(f, len, skb->vlan_present, skb->vlan_tci) != PARSE_OK) {
		ps->malformed++;
		return TC_ACT_SHOT;
	}
	/* the host's own frames that already carry an R-TAG are not numbered again */
	if (direction == FRER_DIR_EGRESS && f->rtag && !f->rtag_bad) {
		ps->to_stack++;
		return TC_ACT_OK;
	}
	sid = frer_identify_tagged(port, direction, f, ps);
	if (sid == FRER_BAD_RTAG)
		return TC_ACT_SHOT;
	if (sid < 0)
		return direction == FRER_DIR_INGRESS ? plain_forward(skb, s, f, port, ps)
						     : (ps->to_stack++, TC_ACT_OK);
	stream = sid;
	st = bpf_map_lookup_elem(&streams, &stream);
	if (!st)
		return TC_ACT_SHOT;
	sp = sp_stats_of(stream, port);
	if (sp && direction == FRER_DIR_INGRESS)
		sp->input++;
	else if (sp)
		sp->input_sent++;
	/* A GSO packet is many frames not segmented yet (the tc hooks run before segmentation,
	 * and BPF cannot segment): numbered, eliminated or re-tagged as one, all its frames would
	 * share one sequence number. Refused; `frerlab dataplane up` turns off the offloads that
	 * build such packets on the node's ports. */
	if ((skb->gso_segs > 1 || skb->gso_size) &&
	    (f->rtag || st->rcvy_ports ||
	     (st->flags & (FRER_STREAM_GENERATE | FRER_STREAM_INDIVIDUAL | FRER_STREAM_RECOVER |
			   FRER_STREAM_FILTERED)))) {
		ps->gso_refused++;
		return TC_ACT_SHOT;
	}
	/* stream filters and flow meters (802.1Qci) see received frames before any FRER function */
	if (direction == FRER_DIR_INGRESS && frer_filter(s, st, stream, port, f) == VERDICT_DISCARD)
		return TC_ACT_SHOT;
	if (frer_stream_in(s, st, stream, port, f, ps, &rc) == VERDICT_DISCARD)
		return TC_ACT_SHOT;
	if (st->flags & FRER_STREAM_ENCODE) {
		if (f->rtag && (st->flags & FRER_STREAM_GENERATE)) {
			__be16 seq_be = bpf_htons(rc.seq);

			if (bpf_skb_store_bytes(skb, f->l2_end + 4, &seq_be, 2, 0))
				goto tx_error;
		} else if (!f->rtag && rc.has_seq && rtag_push(skb, f, rc.seq)) {
			goto tx_error;
		}
	} else if (f->rtag) {
		if (rtag_pop(skb, f))
			goto tx_error;
		popped = 1;
	}
	return send_copies(skb, f, st, stream, ps, direction, popped, &rc);
tx_error:
	ps->tx_errors++;
	return TC_ACT_SHOT;
}

SEC("tc")
int frer_ingress(struct __sk_buff *skb)
{
	return frer_frame(skb, skb->ingress_ifindex, FRER_DIR_INGRESS);
}

SEC("tc")
int frer_egress(struct __sk_buff *skb)
{
	return frer_frame(skb, skb->ifindex, FRER_DIR_EGRESS);
}

char _license[] SEC("license") = "GPL";