// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * frerlab eBPF data plane: IEEE 802.1CB FRER as an XDP program, the fast path of frer.c.
 *
 * frer_xdp runs on the ports of a node for received frames, before the kernel makes an skb of
 * them (native XDP) or on the skb (generic XDP). It shares frer.o's maps (the loader reuses
 * them) and everything but the frame surgery and sending with the tc programs: parsing,
 * identification, sequence generation and recovery are frer_common.h's. The R-TAG is pushed and
 * popped by moving the frame's head (bpf_xdp_adjust_head), which costs the same at any length.
 * Copies: one output is a bpf_redirect (or XDP_PASS for this host); more are one broadcast
 * redirect into the entry of xdp_copies of its output ports, a device map of exactly them.
 * Copies rewritten alike are rewritten once, before the broadcast; where the rewrites differ per
 * port (active stream identification on one path), the device map runs frer_xdp_copy on each
 * copy as it leaves, which takes the stream from the frame's metadata and gives the copy its
 * port's rewrite. That needs native XDP (generic XDP's broadcast clones share one frame and
 * drop the metadata: the loader keeps such a port on tc). The loader refuses a stream that also
 * goes to this host or through a recovery function on an output port (tc's). There is no egress
 * hook in XDP: frames the host sends stay with frer_egress (tc). A VLAN tag held in skb
 * metadata is not seen here.
 */
#include <linux/bpf.h>

#include "frer_common.h"

/* Per set of output ports of the streams with more than one output (frer_stream.copies): a
 * device map of those ports (ifindex -> the port, and frer_xdp_copy for the streams rewritten
 * per copy), created and filled by the loader; a broadcast redirect sends one copy to each.
 * Shared by the streams with the same ports and the same program: an update of a map-in-map
 * waits for an RCU grace period, too slow to make one per stream of 64k. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FRER_MAX_COPY_SETS);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
		__uint(max_entries, FRER_MAX_OUTPUTS);
		__type(key, __u32);
		__uint(value_size, sizeof(struct bpf_devmap_val));
	});
} xdp_copies SEC(".maps");

/* The bridge ports (ifindex -> ifindex): where the learning bridge floods, but for the port the
 * frame came in by. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} xdp_bridge SEC(".maps");

/* Insert an R-TAG with seq at f->l2_end: the head moves 6 bytes to the front, and the MACs and
 * any VLAN tags, followed by the tag, are written there in one store. */
static __always_inline int rtag_push(struct xdp_md *ctx, const struct frame *f, __u16 seq)
{
	__u8 head[20 + FRER_RTAG_LEN] = {};

	if (f->l2_end != 12 && f->l2_end != 16 && f->l2_end != 20)
		return -1;
	if (bpf_xdp_adjust_head(ctx, -FRER_RTAG_LEN))
		return -1;
	if (f->l2_end == 12) {
		frer_tagged_head(head, f, seq, 12);
		return bpf_xdp_store_bytes(ctx, 0, head, 12 + FRER_RTAG_LEN);
	}
	if (f->l2_end == 16) {
		frer_tagged_head(head, f, seq, 16);
		return bpf_xdp_store_bytes(ctx, 0, head, 16 + FRER_RTAG_LEN);
	}
	frer_tagged_head(head, f, seq, 20);
	return bpf_xdp_store_bytes(ctx, 0, head, 20 + FRER_RTAG_LEN);
}

/* Remove the R-TAG at f->l2_end: the MACs and VLAN tags are written 6 bytes further on, over
 * the tag, and the head moves there. */
static __always_inline int rtag_pop(struct xdp_md *ctx, const struct frame *f)
{
	int err;

	if (f->l2_end == 12)
		err = bpf_xdp_store_bytes(ctx, FRER_RTAG_LEN, (void *)f->hdr, 12);
	else if (f->l2_end == 16)
		err = bpf_xdp_store_bytes(ctx, FRER_RTAG_LEN, (void *)f->hdr, 16);
	else if (f->l2_end == 20)
		err = bpf_xdp_store_bytes(ctx, FRER_RTAG_LEN, (void *)f->hdr, 20);
	else
		return -1;
	return err ? err : bpf_xdp_adjust_head(ctx, FRER_RTAG_LEN);
}

/* What frer_xdp_copy needs of a frame rewritten per copy, left in its metadata by frer_xdp. */
struct copy_meta {
	__u16 stream;
	__u8 vlan; /* frame.vlan */
	__u8 pcp;  /* frame.pcp */
};

/* Give the frame (MACs `macs`, an outer VLAN tag if `vlan`, of priority `pcp`) output o's
 * destination MAC and VID / PCP (active stream identification). The outer VLAN tag is in the
 * frame here: its TCI is replaced, or a tag is inserted after the MACs. Without a configured PCP
 * a tag keeps the frame's (0 for an untagged frame). */
static __always_inline int output_rewrite(struct xdp_md *ctx, const struct frer_output *o,
					  const __u8 *macs, __u8 vlan, __u8 pcp)
{
	if (o->flags & FRER_OUT_SET_VID) {
		__u16 tci = (__u16)copy_pcp(o, vlan ? pcp : -1, 0) << 13 | (o->vid & 0x0fff);
		__u8 head[16] = {};

		__builtin_memcpy(head, macs, 12);
		head[12] = ETH_P_8021Q >> 8;
		head[13] = ETH_P_8021Q & 0xff;
		head[14] = tci >> 8;
		head[15] = tci & 0xff;
		if (vlan) {
			if (bpf_xdp_store_bytes(ctx, 12, &head[12], 4))
				return -1;
		} else if (bpf_xdp_adjust_head(ctx, -4) || bpf_xdp_store_bytes(ctx, 0, head, 16)) {
			return -1;
		}
	}
	if ((o->flags & FRER_OUT_SET_DMAC) && bpf_xdp_store_bytes(ctx, 0, (void *)o->dmac, 6))
		return -1;
	return 0;
}

/* Leave the stream and what its rewrites need of the frame in the frame's metadata, for
 * frer_xdp_copy. */
static __always_inline int mark_stream(struct xdp_md *ctx, __u32 stream, const struct frame *f)
{
	struct copy_meta *m;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return -1;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > (void *)(long)ctx->data)
		return -1;
	m->stream = stream;
	m->vlan = f->vlan;
	m->pcp = f->pcp;
	return 0;
}

/* Send the stream's copies; returns the XDP verdict. One output: through the sequence recovery
 * function placed on it if there is one, then to this host (XDP_PASS; its R-TAG is gone, so the
 * kernel sees its own EtherType) or redirected. More: one broadcast to the stream's device map,
 * rewritten here or, per copy, by frer_xdp_copy. A copy is counted as output once it was
 * handed to the redirect. */
static __always_inline int send_copies(struct xdp_md *ctx, const struct frame *f,
				       const struct frer_stream *st, __u32 stream,
				       struct frer_port_stats *ps, const struct recovery_ctx *rc)
{
	__u32 n = st->n_outputs;
	const struct frer_output *o = &st->out[0];
	struct frer_stream_port_stats *sp;
	void *copies;
	int verdict;

	if (n == 0 || n > FRER_MAX_OUTPUTS)
		return XDP_DROP;
	if (n == 1) {
		__u32 out_port = o->port % FRER_MAX_PORTS;

		if (o->flags & FRER_OUT_LOCAL)
			return output_rewrite(ctx, o, f->hdr, f->vlan, f->pcp) ? XDP_DROP : XDP_PASS;
		if (frer_output_discards(st, out_port, rc))
			return XDP_DROP;
		if (output_rewrite(ctx, o, f->hdr, f->vlan, f->pcp))
			goto tx_error;
		verdict = bpf_redirect(o->ifindex, 0);
		if (verdict == XDP_REDIRECT && (sp = sp_stats_of(stream, out_port)))
			sp->output++;
		return verdict;
	}
	__u32 set = st->copies;

	copies = bpf_map_lookup_elem(&xdp_copies, &set);
	if (!copies)
		goto tx_error;
	if (st->flags & FRER_STREAM_PER_COPY ? mark_stream(ctx, stream, f)
					      : output_rewrite(ctx, o, f->hdr, f->vlan, f->pcp))
		goto tx_error;
	verdict = bpf_redirect_map(copies, 0, BPF_F_BROADCAST | XDP_DROP);
	if (verdict != XDP_REDIRECT)
		goto tx_error;
	for (__u32 i = 0; i < FRER_MAX_OUTPUTS; i++) {
		if (i >= n)
			break;
		sp = sp_stats_of(stream, st->out[i].port % FRER_MAX_PORTS);
		if (sp)
			sp->output++;
	}
	return verdict;
tx_error:
	ps->tx_errors++;
	return XDP_DROP;
}

/* Frames of no stream: learning bridge over the bridge ports, or the kernel. */
static __always_inline int plain_forward(const struct frer_settings *s, const struct frame *f,
					 __u32 port, struct frer_port_stats *ps)
{
	__u32 out = 0;

	switch (bridge_lookup(s, f, port, ps, &out)) {
	case BRIDGE_STACK:
		return XDP_PASS;
	case BRIDGE_DROP:
		return XDP_DROP;
	case BRIDGE_UNICAST:
		return bpf_redirect(out, 0);
	case BRIDGE_FLOOD:
		break;
	}
	return bpf_redirect_map(&xdp_bridge, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS | XDP_DROP);
}

SEC("xdp")
int frer_xdp(struct xdp_md *ctx)
{
	__u32 zero = 0, ifindex = ctx->ingress_ifindex, len = bpf_xdp_get_buff_len(ctx), copy;
	struct frer_settings *s = bpf_map_lookup_elem(&settings, &zero);
	int port_i = port_of(ifindex);
	struct frame *f = bpf_map_lookup_elem(&scratch, &zero);
	struct frer_port_stats *ps;
	struct frer_stream *st;
	struct frer_stream_port_stats *sp;
	struct recovery_ctx rc = {};
	__u32 port, stream;
	int sid;

	if (!s || port_i < 0 || !f)
		return XDP_PASS;
	port = port_i;
	ps = port_stats_of(port);
	if (!ps)
		return XDP_PASS;
	ps->frames++;
	/* the bytes to copy, bounded on a register of its own (the verifier does not carry the
	 * bound of a 32-bit copy of len across, and len is kept whole for frame_parse) */
	copy = len;
	barrier_var(copy);
	if (copy > HDR_MAX)
		copy = HDR_MAX;
	if (copy < ETH_HLEN || bpf_xdp_load_bytes(ctx, 0, f->hdr, copy) < 0 ||
	    frame_parse(f, len, 0, 0) != PARSE_OK) {
		ps->malformed++;
		return XDP_DROP;
	}
	sid = frer_identify_tagged(port, FRER_DIR_INGRESS, f, ps);
	if (sid == FRER_BAD_RTAG)
		return XDP_DROP;
	if (sid < 0)
		return plain_forward(s, f, port, ps);
	stream = sid;
	st = bpf_map_lookup_elem(&streams, &stream);
	if (!st)
		return XDP_DROP;
	sp = sp_stats_of(stream, port);
	if (sp)
		sp->input++;
	if (frer_filter(s, st, stream, port, f) == VERDICT_DISCARD)
		return XDP_DROP;
	if (frer_stream_in(s, st, stream, port, f, ps, &rc) == VERDICT_DISCARD)
		return XDP_DROP;
	if (st->flags & FRER_STREAM_ENCODE) {
		if (f->rtag && (st->flags & FRER_STREAM_GENERATE)) {
			__be16 seq_be = bpf_htons(rc.seq);

			if (bpf_xdp_store_bytes(ctx, f->l2_end + 4, &seq_be, 2))
				goto tx_error;
		} else if (!f->rtag && rc.has_seq && rtag_push(ctx, f, rc.seq)) {
			goto tx_error;
		}
	} else if (f->rtag && rtag_pop(ctx, f)) {
		goto tx_error;
	}
	return send_copies(ctx, f, st, stream, ps, &rc);
tx_error:
	ps->tx_errors++;
	return XDP_DROP;
}

/* A copy of a stream rewritten per copy, leaving by the device map's port egress_ifindex: the
 * stream and the frame's outer tag are in the metadata frer_xdp left (mark_stream), which goes;
 * the copy gets the rewrite of the stream's output to that port. Anything else is dropped and
 * counted as a transmit error of the port. */
SEC("xdp/devmap")
int frer_xdp_copy(struct xdp_md *ctx)
{
	struct copy_meta *meta = (void *)(long)ctx->data_meta, m;
	struct frer_stream *st;
	__u8 macs[12];
	__u32 stream;

	if ((void *)(meta + 1) > (void *)(long)ctx->data)
		return XDP_DROP;
	m = *meta;
	stream = m.stream;
	st = bpf_map_lookup_elem(&streams, &stream);
	if (!st || bpf_xdp_adjust_meta(ctx, sizeof(m)))
		return XDP_DROP;
	for (__u32 i = 0; i < FRER_MAX_OUTPUTS; i++) {
		const struct frer_output *o = &st->out[i];
		struct frer_port_stats *ps;

		if (i >= st->n_outputs)
			break;
		if (o->ifindex != ctx->egress_ifindex)
			continue;
		if (!bpf_xdp_load_bytes(ctx, 0, macs, sizeof(macs)) &&
		    !output_rewrite(ctx, o, macs, m.vlan, m.pcp))
			return XDP_PASS;
		ps = port_stats_of(o->port % FRER_MAX_PORTS);
		if (ps)
			ps->tx_errors++;
		return XDP_DROP;
	}
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
