// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * frerlab eBPF data plane: IEEE 802.1CB FRER as tc (clsact, direct-action) programs.
 *
 * frer_ingress runs on every port of a node for received frames; frer_egress on ports where
 * the host itself sends a stream (talker end-station). For each frame: parse (Ethernet, VLAN
 * in the frame or in skb metadata, R-TAG, IPv4/IPv6, ports), identify the stream, then do
 * what the node's `frer_stream` entry says: sequence generation, individual recovery on the
 * member port, sequence recovery of the compound stream, R-TAG push or pop, and one copy per
 * output port (each with its own destination MAC / VID if configured). Frames of no stream
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frer_settings);
} settings SEC(".maps");

/* ifindex -> port index */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} port_of_ifindex SEC(".maps");

/* port index -> ifindex (for bridge flooding) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} ifindex_of_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_IDENTITIES);
	__type(key, __u32);
	__type(value, struct frer_identity);
} identities SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct frer_stream);
} streams SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct frer_seqgen);
} seqgen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_STREAMS * FRER_RCVY_PER_STREAM);
	__type(key, __u32);
	__type(value, struct frer_rcvy);
} rcvy SEC(".maps");

/* management resets asked for, per recovery function (see struct frer_rcvy) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_STREAMS * FRER_RCVY_PER_STREAM);
	__type(key, __u32);
	__type(value, __u32);
} rcvy_reset_requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct frer_port_stats);
} port_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FRER_MAX_STREAMS * FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct frer_stream_port_stats);
} stream_port_stats SEC(".maps");

/* learned source MAC -> port index */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct frer_fdb_key);
	__type(value, __u32);
} fdb SEC(".maps");

#define HDR_MAX 128 /* bytes of headers read per frame: Eth + 2 VLAN + R-TAG + IPv4 opts + L4 */

#define ETH_P_8021Q_BE bpf_htons(ETH_P_8021Q)
#define ETH_P_8021AD_BE bpf_htons(ETH_P_8021AD)

/* What the parser found. Offsets are from the start of the frame. */
struct frame {
	__u32 len;         /* bytes copied into hdr */
	__u16 l2_end;      /* offset of the R-TAG (or where one would go): after MACs and tags */
	__u16 vid;         /* outer VLAN ID (host order) */
	__u8 pcp;          /* outer VLAN tag's priority (PCP) */
	__u8 vlan;         /* a VLAN tag is present (in the frame or in skb metadata) */
	__u8 rtag;         /* an R-TAG is present */
	__u8 rtag_bad;     /* an R-TAG is cut short by the end of the frame */
	__u8 ip;           /* 4, 6 or 0 */
	__u16 seq;         /* R-TAG sequence number (host order), valid if rtag */
	__u8 dscp;
	__u8 proto;
	__be16 sport;
	__be16 dport;
	__u8 l4;           /* sport/dport are valid */
	__be32 ip_src[4];
	__be32 ip_dst[4];
	__u8 hdr[HDR_MAX];
};

/* Per-CPU scratch for the parsed frame (too large for the 512-byte BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame);
} scratch SEC(".maps");

enum parse_result { PARSE_OK, PARSE_MALFORMED };

/* Big-endian 16-bit field at off of the copied headers, returned in host order; 0 when out of
 * range (callers check lengths first). */
static __always_inline __u16 hdr_u16(const struct frame *f, __u32 off)
{
	if (off > HDR_MAX - 2)
		return 0;
	return ((__u16)f->hdr[off] << 8) | f->hdr[off + 1];
}

static __always_inline __be32 hdr_be32(const struct frame *f, __u32 off)
{
	__be32 v = 0;

	if (off > HDR_MAX - 4)
		return 0;
	__builtin_memcpy(&v, &f->hdr[off], 4);
	return v;
}

/* IP fields after the ethertype at l3 (etype in host order). Non-IP or truncated IP leaves
 * f->ip = 0: such a frame matches no IP identity but is otherwise a normal frame. */
static __always_inline void parse_ip(struct frame *f, __u16 etype, __u32 l3)
{
	__u32 l4 = 0;

	if (etype == ETH_P_IP) {
		if (l3 > HDR_MAX - 20 || l3 + 20 > f->len)
			return;
		__u8 vihl = f->hdr[l3];
		__u32 ihl = (vihl & 0x0f) * 4;
		if ((vihl >> 4) != 4 || ihl < 20)
			return;
		f->ip = 4;
		f->dscp = f->hdr[l3 + 1] >> 2;
		f->proto = f->hdr[l3 + 9];
		f->ip_src[0] = hdr_be32(f, l3 + 12);
		f->ip_dst[0] = hdr_be32(f, l3 + 16);
		/* no ports in a non-first fragment */
		if (hdr_u16(f, l3 + 6) & 0x1fff)
			return;
		l4 = l3 + ihl;
	} else if (etype == ETH_P_IPV6) {
		if (l3 > HDR_MAX - 40 || l3 + 40 > f->len)
			return;
		if ((f->hdr[l3] >> 4) != 6)
			return;
		f->ip = 6;
		f->dscp = (hdr_u16(f, l3) >> 6) & 0x3f;
		f->proto = f->hdr[l3 + 6];
		for (int i = 0; i < 4; i++) {
			f->ip_src[i] = hdr_be32(f, l3 + 8 + 4 * i);
			f->ip_dst[i] = hdr_be32(f, l3 + 24 + 4 * i);
		}
		l4 = l3 + 40;
	} else {
		return;
	}
	if ((f->proto == 6 || f->proto == 17 || f->proto == 132) && l4 + 4 <= f->len &&
	    l4 <= HDR_MAX - 4) {
		__builtin_memcpy(&f->sport, &f->hdr[l4], 2);
		__builtin_memcpy(&f->dport, &f->hdr[l4 + 2], 2);
		f->l4 = 1;
	}
}

/* Parse the headers of skb into f. */
static __always_inline enum parse_result parse(struct __sk_buff *skb, struct frame *f)
{
	__u32 len = skb->len;
	__u32 off = 12;
	__u16 etype;

	if (len < ETH_HLEN)
		return PARSE_MALFORMED;
	if (len > HDR_MAX)
		len = HDR_MAX;
	if (bpf_skb_load_bytes(skb, 0, f->hdr, len & (HDR_MAX * 2 - 1)) < 0)
		return PARSE_MALFORMED;
	f->len = len;
	f->vlan = 0;
	f->vid = 0;
	f->pcp = 0;
	f->rtag = 0;
	f->rtag_bad = 0;
	f->seq = 0;
	f->ip = 0;
	f->l4 = 0;
	f->dscp = 0;
	f->proto = 0;
	f->sport = 0;
	f->dport = 0;
	for (int i = 0; i < 4; i++) {
		f->ip_src[i] = 0;
		f->ip_dst[i] = 0;
	}
	if (skb->vlan_present) {
		f->vlan = 1;
		f->vid = skb->vlan_tci & 0x0fff;
		f->pcp = skb->vlan_tci >> 13;
	}
	etype = hdr_u16(f, off);
	/* up to two VLAN tags inside the frame (the outer one identifies) */
	for (int i = 0; i < 2; i++) {
		if (etype != ETH_P_8021Q && etype != ETH_P_8021AD)
			break;
		if (off + 6 > len)
			return PARSE_MALFORMED;
		if (!f->vlan) {
			f->vlan = 1;
			f->vid = hdr_u16(f, off + 2) & 0x0fff;
			f->pcp = hdr_u16(f, off + 2) >> 13;
		}
		off += 4;
		etype = hdr_u16(f, off);
	}
	f->l2_end = off;
	if (etype == FRER_RTAG_ETHERTYPE) {
		f->rtag = 1;
		if (off + 2 + FRER_RTAG_LEN > len) {
			f->rtag_bad = 1;
			return PARSE_OK;
		}
		/* the reserved field is ignored on receipt (docs/8021cb-decisions.md) */
		f->seq = hdr_u16(f, off + 4);
		off += FRER_RTAG_LEN;
		etype = hdr_u16(f, off);
	}
	parse_ip(f, etype, off + 2);
	return PARSE_OK;
}

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	for (int i = 0; i < 6; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static __always_inline int addr_eq(const __be32 *a, const __be32 *b, int words)
{
	for (int i = 0; i < 4; i++)
		if (i < words && a[i] != b[i])
			return 0;
	return 1;
}

/* Whether frame f, received on (or sent from) port with its PVID, is identity id's. An
 * untagged or priority-tagged (VID 0) frame's VLAN is the port's PVID (802.1Q 6.9); the PCP is
 * never matched (crates/frer/src/identify.rs is the reference). */
static __always_inline int identity_matches(const struct frer_identity *id,
					    const struct frame *f, __u32 port, __u8 direction,
					    __u16 pvid)
{
	__u16 m = id->fields;
	__u16 vid = f->vlan && f->vid ? f->vid : pvid;

	if (id->direction != direction || !(id->port_mask & (1u << (port & 31))))
		return 0;
	if (id->vlan_mode == FRER_VLAN_TAGGED && !f->vlan)
		return 0;
	if (id->vlan_mode == FRER_VLAN_PRIORITY && f->vlan && f->vid != 0)
		return 0;
	if (id->vid && vid != id->vid)
		return 0;
	if ((m & FRER_MATCH_DMAC) && !mac_eq(id->dmac, &f->hdr[0]))
		return 0;
	if ((m & FRER_MATCH_SMAC) && !mac_eq(id->smac, &f->hdr[6]))
		return 0;
	if ((m & FRER_MATCH_IP) && !f->ip)
		return 0;
	if ((m & FRER_MATCH_IPV4) && f->ip != 4)
		return 0;
	if ((m & FRER_MATCH_IPV6) && f->ip != 6)
		return 0;
	if (m & (FRER_MATCH_IP_SRC | FRER_MATCH_IP_DST | FRER_MATCH_DSCP | FRER_MATCH_PROTO)) {
		int words = f->ip == 6 ? 4 : 1;

		if (!f->ip)
			return 0;
		if ((m & FRER_MATCH_IP_SRC) && !addr_eq(id->ip_src, f->ip_src, words))
			return 0;
		if ((m & FRER_MATCH_IP_DST) && !addr_eq(id->ip_dst, f->ip_dst, words))
			return 0;
		if ((m & FRER_MATCH_DSCP) && f->dscp != id->dscp)
			return 0;
		if ((m & FRER_MATCH_PROTO) && f->proto != id->proto)
			return 0;
	}
	if (m & (FRER_MATCH_SPORT | FRER_MATCH_DPORT)) {
		if (!f->l4)
			return 0;
		if ((m & FRER_MATCH_SPORT) && f->sport != id->sport)
			return 0;
		if ((m & FRER_MATCH_DPORT) && f->dport != id->dport)
			return 0;
	}
	return 1;
}

/* The stream index of the frame in `scratch`, or -1 when no identity matches. A global
 * function, so the verifier checks it once on its own. */
__attribute__((noinline)) int frer_identify(__u32 port, __u32 direction)
{
	__u32 zero = 0;
	struct frer_settings *s = bpf_map_lookup_elem(&settings, &zero);
	struct frame *f = bpf_map_lookup_elem(&scratch, &zero);

	if (!s || !f)
		return -1;
	__u16 pvid = s->pvid[port & (FRER_MAX_PORTS - 1)];

	for (__u32 i = 0; i < FRER_MAX_IDENTITIES; i++) {
		if (i >= s->n_identities)
			break;
		struct frer_identity *id = bpf_map_lookup_elem(&identities, &i);

		if (id && identity_matches(id, f, port, direction, pvid))
			return id->stream < FRER_MAX_STREAMS ? id->stream : -1;
	}
	return -1;
}

/* ---- sequence recovery (802.1CB 7.4.3), mirrors crates/frer/src/recovery.rs ---- */

enum verdict { VERDICT_PASS, VERDICT_DISCARD };

static __always_inline int hist_get(const struct frer_rcvy *r, __u16 n)
{
	return (r->history[(n >> 6) & (FRER_HISTORY_WORDS - 1)] >> (n & 63)) & 1;
}

static __always_inline void hist_set(struct frer_rcvy *r, __u16 n)
{
	r->history[(n >> 6) & (FRER_HISTORY_WORDS - 1)] |= 1ull << (n & 63);
}

/* SequenceRecoveryReset: TakeAny, empty history, counted in resets. Caller holds the lock. */
static __always_inline void rcvy_reset(struct frer_rcvy *r)
{
	for (int i = 0; i < FRER_HISTORY_WORDS; i++)
		r->history[i] = 0;
	r->recov_seq = 0xffff;
	r->take_any = 1;
	r->span = 0;
	r->resets++;
}

/* x clamped to 0..64 without branches (the verifier then sees one path per word). */
static __always_inline __s64 clamp64(__s64 x)
{
	x &= ~(x >> 63);                        /* max(x, 0) */
	return x - ((x - 64) & ~((x - 64) >> 63)); /* min(x, 64) */
}

/* Bits 0 .. n-1 set, for n in 0..64, without branches. */
static __always_inline __u64 low_bits(__s64 n)
{
	return ((1ull << (n & 63)) - 1) | -(__u64)(n >> 6);
}

/* A mask of the positions lo .. hi-1 of the doubled ring (2048 positions) that fall in ring
 * word w, which holds positions w*64.. and, doubled, w*64+1024.. . */
static __always_inline __u64 word_mask(__s64 lo, __s64 hi, __s64 w)
{
	__u64 mask = 0;

	for (int half = 0; half < 2; half++) {
		__s64 base = w * 64 + half * FRER_HISTORY_MAX;

		mask |= low_bits(clamp64(hi - base)) & ~low_bits(clamp64(lo - base));
	}
	return mask;
}

/* Move the vector window forward by delta (1 <= delta < HL). The numbers that leave it are
 * RecovSeqNum-HL+1 .. RecovSeqNum-HL+delta; each one left unseen counts as lost if it came
 * after the first number accepted since the last reset (the newest `span` numbers). Their
 * bits are cleared, so only numbers inside the window ever have a bit set. The leaving range
 * is handled in a doubled ring of 2048 positions, so it never wraps. */
static __always_inline void vector_advance(struct frer_rcvy *r, __u32 delta)
{
	__s64 hl = r->history_length;
	__s64 skip = hl - r->span; /* leaving numbers from before the first accepted one */
	__s64 start = (__u16)(r->recov_seq - hl + 1) & (FRER_HISTORY_MAX - 1);
	__s64 counted_from = start + (skip < delta ? skip : delta);
	__s64 end = start + delta;
	__u64 seen = 0;

	for (int w = 0; w < FRER_HISTORY_WORDS; w++) {
		__u64 word = r->history[w];

		seen += __builtin_popcountll(word & word_mask(counted_from, end, w));
		r->history[w] = word & ~word_mask(start, end, w);
	}
	r->lost += (end - counted_from) - seen;
	r->span = r->span + delta >= hl ? hl : r->span + delta;
}

/* One frame through recovery function `key` of map rcvy at time now; has_seq: the frame had
 * an R-TAG. Takes the lock; updates the clause-10 counters; returns the verdict (PASS when the
 * function is not enabled). A global function, so the verifier checks it once on its own. */
__attribute__((noinline)) int frer_recover(__u32 key, __u32 has_seq, __u32 seq_in, __u64 now)
{
	__u16 seq = seq_in;
	struct frer_rcvy *r = bpf_map_lookup_elem(&rcvy, &key);
	__u32 *reset_requests = bpf_map_lookup_elem(&rcvy_reset_requests, &key);
	enum verdict v = VERDICT_PASS;
	int reload = 0;

	if (!r || !(r->flags & FRER_RCVY_ENABLED))
		return VERDICT_PASS;
	bpf_spin_lock(&r->lock);
	if (reset_requests && *reset_requests != r->resets_requested) {
		r->resets_requested = *reset_requests;
		rcvy_reset(r);
	}
	/* `now` was read before the lock: another CPU may have stored a later reload meanwhile,
	 * so the difference is signed (negative: not due), never a wrapped huge value */
	if (r->reset_timeout_ns && !r->take_any &&
	    (__s64)(now - r->last_reload_ns) >= (__s64)r->reset_timeout_ns)
		rcvy_reset(r);
	if (!has_seq) {
		r->tagless++;
		if (r->flags & FRER_RCVY_TAKE_NO_SEQUENCE)
			r->passed++;
		else
			v = VERDICT_DISCARD;
		goto out;
	}
	if (r->take_any) {
		r->take_any = 0;
		r->recov_seq = seq;
		if (r->algorithm == FRER_ALG_VECTOR) {
			hist_set(r, seq);
			r->span = 1;
		}
		r->passed++;
		reload = 1;
		goto out;
	}
	__s32 delta = (__s16)(__u16)(seq - r->recov_seq);
	if (r->algorithm == FRER_ALG_MATCH) {
		if (delta == 0) {
			r->discarded++;
			v = VERDICT_DISCARD;
		} else {
			if (delta != 1)
				r->out_of_order++;
			r->recov_seq = seq;
			r->passed++;
			reload = 1;
		}
		goto out;
	}
	__s32 hl = r->history_length;
	if (delta >= hl || delta <= -hl) {
		r->rogue++;
		r->last_rogue_ns = now;
		v = VERDICT_DISCARD;
	} else if (delta <= 0) {
		if (hist_get(r, seq)) {
			r->discarded++;
			v = VERDICT_DISCARD;
		} else {
			hist_set(r, seq);
			r->out_of_order++;
			r->passed++;
			reload = 1;
		}
	} else {
		if (delta != 1)
			r->out_of_order++;
		vector_advance(r, delta);
		r->recov_seq = seq;
		hist_set(r, seq);
		r->passed++;
		reload = 1;
	}
out:
	/* the timer only moves forward (max(last, now)): see the check above */
	if ((reload || (v == VERDICT_DISCARD && has_seq && (r->flags & FRER_RCVY_INDIVIDUAL))) &&
	    (__s64)(now - r->last_reload_ns) > 0)
		r->last_reload_ns = now;
	if (v == VERDICT_PASS && has_seq)
		r->last_pass_ns = now;
	bpf_spin_unlock(&r->lock);
	return v;
}

/* ---- frame surgery ---- */

/* Writes the frame's first `len` bytes as parsed (its MACs and in-frame VLAN tags) and an
 * R-TAG with seq after them, in one store at the front of a frame that has `FRER_RTAG_LEN`
 * bytes more room there; `len` is a constant where it is inlined. */
static __always_inline int store_tagged_head(struct __sk_buff *skb, const struct frame *f,
					     __u16 seq, const __u32 len)
{
	__u8 head[20 + FRER_RTAG_LEN] = {};

	__builtin_memcpy(head, f->hdr, len);
	head[len] = FRER_RTAG_ETHERTYPE >> 8;
	head[len + 1] = FRER_RTAG_ETHERTYPE & 0xff;
	head[len + 4] = seq >> 8;
	head[len + 5] = seq & 0xff;
	return bpf_skb_store_bytes(skb, 0, head, len + FRER_RTAG_LEN, 0);
}

/* Insert an R-TAG with seq at f->l2_end: the front grows by the tag, and the MACs and any
 * in-frame VLAN tags, followed by the tag (EtherType F1C1, reserved 0, sequence number), are
 * written there in one store; the original EtherType follows. */
static __always_inline int rtag_push(struct __sk_buff *skb, const struct frame *f, __u16 seq)
{
	if (f->l2_end != 12 && f->l2_end != 16 && f->l2_end != 20)
		return -1;
	if (bpf_skb_change_head(skb, FRER_RTAG_LEN, 0))
		return -1;
	if (f->l2_end == 12)
		return store_tagged_head(skb, f, seq, 12);
	if (f->l2_end == 16)
		return store_tagged_head(skb, f, seq, 16);
	return store_tagged_head(skb, f, seq, 20);
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

/* The PCP of the outer VLAN tag a copy leaves with, or -1 for an untagged copy: the tag an
 * active identity gives it carries the configured priority, else the frame's class (its tag's
 * PCP, or its skb->priority when that is a PCP and it had no tag, else 0); without one the
 * copy keeps the frame's own tag. */
static __always_inline int copy_pcp(const struct frer_output *o, const struct l2_original *orig)
{
	if (!(o->flags & FRER_OUT_SET_VID))
		return orig->pcp;
	if (o->flags & FRER_OUT_SET_PCP)
		return o->pcp & 7;
	if (orig->pcp >= 0)
		return orig->pcp;
	return orig->priority < 8 ? orig->priority : 0;
}

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
		__u16 tci = (__u16)copy_pcp(o, orig) << 13 | (o->vid & 0x0fff);

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

static __always_inline struct frer_port_stats *port_stats_of(__u32 port)
{
	return bpf_map_lookup_elem(&port_stats, &port);
}

static __always_inline struct frer_stream_port_stats *sp_stats_of(__u32 stream, __u32 port)
{
	__u32 key = stream * FRER_MAX_PORTS + port;

	return bpf_map_lookup_elem(&stream_port_stats, &key);
}

/* Send the stream's copies; returns the tc verdict for the original skb. The last copy
 * goes up to the stack (FRER_OUT_LOCAL on ingress; once more through the port's ingress if its
 * R-TAG was removed, because the kernel still takes it for an R-TAG frame) or, for a frame the
 * host sends, out of the port it was sent to when that is its output port. */
/* The frame's sequence number (has_seq: it has one) and the time, for the recovery functions
 * placed on the ports its copies leave by; base: the stream's first `rcvy` index. */
struct recovery_ctx {
	__u32 base;
	__u32 has_seq;
	__u32 seq;
	__u64 now;
};

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

		if (!local && (st->rcvy_ports & (1u << out_port)) &&
		    frer_recover(rc->base + 1 + out_port, rc->has_seq, rc->seq, rc->now) == VERDICT_DISCARD) {
			struct frer_port_stats *ops = port_stats_of(out_port);

			if (ops)
				ops->rcvy_discarded++;
			if (last)
				return TC_ACT_SHOT;
			continue;
		}
		if (output_rewrite(skb, o, &orig, &dirty)) {
			ps->tx_errors++;
			continue;
		}
		pcp = copy_pcp(o, &orig);
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
	struct frer_fdb_key key = {};
	__u32 *dst_port;

	if (!(s->bridge_ports & (1u << port))) {
		ps->to_stack++;
		return TC_ACT_OK;
	}
	ps->bridged++;
	__builtin_memcpy(key.mac, &f->hdr[6], 6);
	if (!(key.mac[0] & 1))
		bpf_map_update_elem(&fdb, &key, &port, BPF_ANY);
	__builtin_memcpy(key.mac, &f->hdr[0], 6);
	dst_port = (key.mac[0] & 1) ? 0 : bpf_map_lookup_elem(&fdb, &key);
	if (dst_port) {
		__u32 p = *dst_port;
		__u32 *ifindex = bpf_map_lookup_elem(&ifindex_of_port, &p);

		if (p == port)
			return TC_ACT_SHOT;
		if (ifindex && (s->bridge_ports & (1u << (p & 31))))
			return bpf_redirect(*ifindex, 0);
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

static __always_inline __u64 now_ns(const struct frer_settings *s)
{
	if (s->flags & FRER_SETTING_FIXED_CLOCK)
		return s->fixed_now_ns;
	return bpf_ktime_get_ns();
}

/* The whole per-frame path of a port, for frames received (ingress) or sent (egress). */
static __always_inline int frer_frame(struct __sk_buff *skb, __u32 ifindex, __u8 direction)
{
	__u32 zero = 0;
	struct frer_settings *s = bpf_map_lookup_elem(&settings, &zero);
	__u32 *port_p = bpf_map_lookup_elem(&port_of_ifindex, &ifindex);
	struct frame *f = bpf_map_lookup_elem(&scratch, &zero);
	struct frer_port_stats *ps;
	struct frer_stream *st;
	struct frer_stream_port_stats *sp;
	__u32 port, stream;
	int sid, has_seq, popped = 0;
	__u16 seq;
	struct recovery_ctx rc = {};

	if (!s || !port_p || !f)
		return TC_ACT_OK;
	port = *port_p % FRER_MAX_PORTS;
	ps = port_stats_of(port);
	if (!ps)
		return TC_ACT_OK;
	if (direction == FRER_DIR_INGRESS && (skb->mark & FRER_MARK_REINJECTED)) {
		skb->mark &= ~FRER_MARK_REINJECTED;
		ps->reinjected++;
		return TC_ACT_OK;
	}
	ps->frames++;
	if (parse(skb, f) != PARSE_OK) {
		ps->malformed++;
		return TC_ACT_SHOT;
	}
	/* the host's own frames that already carry an R-TAG are not numbered again */
	if (direction == FRER_DIR_EGRESS && f->rtag && !f->rtag_bad) {
		ps->to_stack++;
		return TC_ACT_OK;
	}
	sid = frer_identify(port, direction);
	if (f->rtag_bad) {
		ps->seq_enc_errored++;
		if (sid >= 0 && (sp = sp_stats_of(sid, port)))
			sp->seq_enc_errored++;
		return TC_ACT_SHOT;
	}
	if (sid < 0)
		return direction == FRER_DIR_INGRESS ? plain_forward(skb, s, f, port, ps)
						     : (ps->to_stack++, TC_ACT_OK);
	stream = sid;
	st = bpf_map_lookup_elem(&streams, &stream);
	sp = sp_stats_of(stream, port);
	if (!st || !sp)
		return TC_ACT_SHOT;
	if (direction == FRER_DIR_INGRESS)
		sp->input++;
	else
		sp->input_sent++;
	/* A GSO packet is many frames not segmented yet (the tc hooks run before segmentation,
	 * and BPF cannot segment): numbered, eliminated or re-tagged as one, all its frames would
	 * share one sequence number. Refused; `frerlab dataplane up` turns off the offloads that
	 * build such packets on the node's ports. */
	if ((skb->gso_segs > 1 || skb->gso_size) &&
	    (f->rtag || st->rcvy_ports ||
	     (st->flags & (FRER_STREAM_GENERATE | FRER_STREAM_INDIVIDUAL | FRER_STREAM_RECOVER)))) {
		ps->gso_refused++;
		return TC_ACT_SHOT;
	}
	has_seq = f->rtag;
	seq = f->seq;
	if (st->flags & FRER_STREAM_GENERATE) {
		struct frer_seqgen *g = bpf_map_lookup_elem(&seqgen, &stream);

		if (!g)
			return TC_ACT_SHOT;
		seq = (__u16)__sync_fetch_and_add(&g->next, 1);
		__sync_fetch_and_add(&g->generated, 1);
		has_seq = 1;
	}
	rc.base = stream * FRER_RCVY_PER_STREAM;
	rc.has_seq = has_seq;
	rc.seq = seq;
	if ((st->flags & (FRER_STREAM_INDIVIDUAL | FRER_STREAM_RECOVER)) || st->rcvy_ports) {
		__u32 individual = st->individual[port];

		rc.now = now_ns(s);
		/* the member stream's individual recovery, then the sequence recovery on this port,
		 * then the compound stream's */
		if (((st->flags & FRER_STREAM_INDIVIDUAL) && individual &&
		     frer_recover(rc.base + individual, has_seq, seq, rc.now) == VERDICT_DISCARD) ||
		    ((st->rcvy_ports & (1u << port)) &&
		     frer_recover(rc.base + 1 + port, has_seq, seq, rc.now) == VERDICT_DISCARD) ||
		    ((st->flags & FRER_STREAM_RECOVER) &&
		     frer_recover(rc.base, has_seq, seq, rc.now) == VERDICT_DISCARD)) {
			if (has_seq)
				ps->rcvy_discarded++;
			return TC_ACT_SHOT;
		}
		ps->rcvy_passed++;
	}
	if (st->flags & FRER_STREAM_ENCODE) {
		if (f->rtag && (st->flags & FRER_STREAM_GENERATE)) {
			__be16 seq_be = bpf_htons(seq);

			if (bpf_skb_store_bytes(skb, f->l2_end + 4, &seq_be, 2, 0))
				goto tx_error;
		} else if (!f->rtag && has_seq && rtag_push(skb, f, seq)) {
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
