/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * frerlab eBPF data plane: limits, map keys and values shared by the BPF programs (frer.c) and
 * the user-space loader (python/frerlab/dataplane/layout.py packs the same layouts with
 * `struct`; every struct here has explicit padding so both sides agree byte for byte).
 */
#ifndef FRER_COMMON_H
#define FRER_COMMON_H

#include <linux/types.h>

/* Ports (interfaces) of one data plane; a port mask is a __u32, so at most 32. 16 covers a
 * relay with 8 member ports plus its end-station side. */
#ifndef FRER_MAX_PORTS
#define FRER_MAX_PORTS 16
#endif
/* Slots of the array `port_of_ifindex` (a power of two above FRER_MAX_PORTS): interface ifindex
 * is looked for from slot ifindex % FRER_PORT_SLOTS on (struct frer_port_slot). */
#define FRER_PORT_SLOTS 64
/* Streams (handles) of one data plane; a stream index is a __u16. The per-stream state is in
 * arrays indexed by it (`streams`, `seqgen`; `rcvy` and `stream_port_stats` by indices made
 * from it): an array lookup is a bounds check and an indexed load the verifier inlines, where
 * a hash lookup hashes the key and walks a bucket (the identity hash is the only hash lookup
 * of a frame). The loader sizes each array to its node (python/frerlab/dataplane/node.py
 * map_shapes); the sizes here are only defaults. */
#ifndef FRER_MAX_STREAMS
#define FRER_MAX_STREAMS 65536
#endif
#define FRER_DEFAULT_STREAMS 1024
/* Identities scanned in order per frame (the array `identities`): the loop bound of the scan.
 * Identities whose shape is hashed (identity_hash) are not scanned. */
#ifndef FRER_MAX_IDENTITIES
#define FRER_MAX_IDENTITIES 32
#endif
/* Entries of identity_hash: one per hashed identity. */
#ifndef FRER_MAX_HASHED
#define FRER_MAX_HASHED 65536
#endif
/* Shapes of hashed identities (the fields they compare, their VLAN rule and their ports): one
 * hash lookup per frame and shape on one of its ports. */
#define FRER_MAX_SHAPES 4
/* Copies of one stream (stream split / replication): the issue asks for 2..8 member ports. */
#define FRER_MAX_OUTPUTS 8
/* Distinct sets of output ports of the XDP streams with more than one output (xdp_copies). */
#define FRER_MAX_COPY_SETS 256
/* Stream filters and flow meters (802.1Qci, struct frer_filter / frer_meter) of one data plane:
 * fixed-size arrays, not reshaped by the loader, because their counters are per CPU (a
 * thousand filters cost 40 KiB per CPU). */
#ifndef FRER_MAX_FILTERS
#define FRER_MAX_FILTERS 1024
#endif
#ifndef FRER_MAX_METERS
#define FRER_MAX_METERS 1024
#endif
/* Longest vector-algorithm history (frerSeqRcvyHistoryLength), in bits. */
#define FRER_HISTORY_MAX 1024
#define FRER_HISTORY_WORDS (FRER_HISTORY_MAX / 64)
/* Recovery instances per stream: index 0 is the compound stream's sequence recovery, index
 * 1 + p the one placed on port p or the individual recovery whose first port is p. Instance i
 * of a stream is entry rcvy_base + i of `rcvy` (struct frer_stream): the loader gives each
 * stream as many entries as its highest instance needs, one after the other's. */
#define FRER_RCVY_PER_STREAM (1 + FRER_MAX_PORTS)

#define FRER_RTAG_ETHERTYPE 0xF1C1
#define FRER_RTAG_LEN 6

/* skb->mark bit of a frame whose R-TAG was removed on its way up to this host: it is handed
 * back to the port's ingress (so the kernel parses it again, with its real EtherType) and the
 * program lets it pass the second time. Override if the bit is used for something else. */
#ifndef FRER_MARK_REINJECTED
#define FRER_MARK_REINJECTED 0x80000000u
#endif

/* frer_settings.flags */
#define FRER_SETTING_FIXED_CLOCK 0x1 /* use fixed_now_ns instead of bpf_ktime_get_ns() */

/* frer_id_shape.flags */
#define FRER_SHAPE_ANY_VID 0x1  /* the identities of the shape take any VID (their vid is 0) */

/* What the hashed identities of one shape compare, and where: a frame received on (or sent
 * from) one of its ports is looked up once per shape, with these fields of it in the key
 * (struct frer_id_key). 8 bytes. */
struct frer_id_shape {
	__u16 fields;     /* FRER_MATCH_* */
	__u8 vlan_mode;   /* FRER_VLAN_* */
	__u8 flags;       /* FRER_SHAPE_* */
	__u32 port_mask;  /* the ports of every identity of the shape */
};

/* Global settings of a data plane: array map `settings`, one entry. 128 bytes. */
struct frer_settings {
	__u32 n_identities;  /* entries of `identities` in use, scanned in order */
	__u32 bridge_ports;  /* mask of ports that plain-forward (learning bridge) other frames */
	__u32 flags;         /* FRER_SETTING_* */
	__u32 n_shapes;      /* shapes in use (0..FRER_MAX_SHAPES): lookups in identity_hash */
	__u32 port_stride;   /* entries of stream_port_stats per stream: the node's ports */
	__u32 pad;
	__u64 fixed_now_ns;  /* the clock under FRER_SETTING_FIXED_CLOCK (vector replay) */
	__u16 pvid[FRER_MAX_PORTS]; /* per port: the VID of untagged and VID 0 frames (802.1Q 6.9) */
	struct frer_id_shape shape[FRER_MAX_SHAPES];
	__u8 pad2[32];       /* to 128 bytes: no cache line of it shared with another object */
};

/* frer_identity.fields: which parameters must match (a clear bit means "any"). */
#define FRER_MATCH_DMAC 0x001
#define FRER_MATCH_SMAC 0x002
#define FRER_MATCH_IPV4 0x004
#define FRER_MATCH_IPV6 0x008
#define FRER_MATCH_IP_SRC 0x010
#define FRER_MATCH_IP_DST 0x020
#define FRER_MATCH_DSCP 0x040
#define FRER_MATCH_PROTO 0x080
#define FRER_MATCH_SPORT 0x100
#define FRER_MATCH_DPORT 0x200
#define FRER_MATCH_IP 0x400       /* the frame must be IPv4 or IPv6 (IP identification) */

/* frer_identity.vlan_mode, the standard's "tagged" parameter */
#define FRER_VLAN_ALL 0      /* tagged or not */
#define FRER_VLAN_TAGGED 1   /* only frames with a VLAN tag */
#define FRER_VLAN_PRIORITY 2 /* only frames without a tag or with VID 0 */

/* frer_identity.direction */
#define FRER_DIR_INGRESS 0 /* frames received on the port (tc ingress) */
#define FRER_DIR_EGRESS 1  /* frames the host sends out of the port (tc egress) */

/* One stream identity, normalised from its 802.1CB type (null, source MAC + VLAN, active
 * destination MAC + VLAN, IP) to one matcher. Array map `identities`, 64 bytes. position is its
 * place in the node's order of identities (the first that matches a frame wins): the scan
 * stops at an entry placed after a hashed identity that matched. */
struct frer_identity {
	__u32 port_mask;  /* ports where it applies */
	__u16 stream;     /* stream index it identifies */
	__u8 direction;   /* FRER_DIR_* */
	__u8 vlan_mode;   /* FRER_VLAN_* */
	__u16 vid;        /* VLAN ID to match (an untagged frame's is its port's PVID), 0 = any */
	__u16 fields;     /* FRER_MATCH_* */
	__u8 dmac[6];
	__u8 smac[6];
	__u8 dscp;        /* 0..63 */
	__u8 proto;       /* IP next protocol */
	__be16 sport;
	__be16 dport;
	__u16 position;
	__be32 ip_src[4]; /* IPv4 in [0], IPv6 in all four */
	__be32 ip_dst[4];
};

/* The key of a hashed identity (hash map `identity_hash`): the fields its shape compares, the
 * others zero. A frame's key is made the same way from the frame, so the two are equal exactly
 * when the identity matches the frame. 56 bytes. */
struct frer_id_key {
	__u8 direction;   /* FRER_DIR_* */
	__u8 pad;
	__u8 shape;       /* index in frer_settings.shape */
	__u8 ip;          /* 4 or 6 under FRER_MATCH_IPV4 / IPV6, else 0 */
	__u16 vid;        /* the frame's VID (an untagged frame's: the PVID), 0 under ANY_VID */
	__u8 dscp;
	__u8 proto;
	__u8 dmac[6];
	__u8 smac[6];
	__be16 sport;
	__be16 dport;
	__be32 ip_src[4];
	__be32 ip_dst[4];
};

/* What identity_hash gives: the stream and the identity's position. 4 bytes. */
struct frer_id_hit {
	__u16 stream;
	__u16 position;
};

/* frer_output.flags */
#define FRER_OUT_SET_DMAC 0x1 /* rewrite the destination MAC of this copy */
#define FRER_OUT_SET_VID 0x2  /* give this copy a VLAN tag with this VID (replacing any) */
#define FRER_OUT_LOCAL 0x4    /* deliver here: ingress -> local stack, egress -> this port */
#define FRER_OUT_SET_PCP 0x8  /* with FRER_OUT_SET_VID: the tag's PCP is pcp (else the frame's:
			       * its tag's, or skb->priority 0..7 for an untagged frame) */

/* One copy of a stream (one member port of a split). 16 bytes. */
struct frer_output {
	__u32 ifindex;
	__u16 flags;   /* FRER_OUT_* */
	__u16 vid;
	__u8 dmac[6];
	__u8 port;     /* port index, for the output counters */
	__u8 pcp;      /* under FRER_OUT_SET_PCP */
};

/* frer_stream.flags */
#define FRER_STREAM_GENERATE 0x1   /* sequence generation here (numbers untagged frames) */
#define FRER_STREAM_RECOVER 0x2    /* sequence recovery of the compound stream here */
#define FRER_STREAM_INDIVIDUAL 0x4 /* individual recovery of member streams here (individual[]) */
#define FRER_STREAM_ENCODE 0x8     /* copies leave with an R-TAG (else it is removed) */
#define FRER_STREAM_PER_COPY 0x10  /* XDP: each copy is rewritten for its port after the
				    * broadcast (frer_xdp_copy), as its outputs' rewrites differ */
#define FRER_STREAM_COARSE_CLOCK 0x20 /* its recovery functions run on the kernel's coarse clock
				       * (one tick's resolution, a few ns to read; the precise
				       * one costs ~25 ns more a read here): the loader sets it
				       * when no reset timeout of the stream is short enough for a
				       * tick to matter (python/frerlab/dataplane/node.py) */
#define FRER_STREAM_FILTERED 0x40  /* a stream filter applies to it on some port: frames
				    * received look their filter up in `filter_of` (frer_filter) */

/* What one node does with one stream. Array `streams` (by stream index), 160 bytes. Recovery instances
 * beyond the compound one (index 0 of the stream's `rcvy` entries) are per port: a sequence
 * recovery function placed on port p (bit p of rcvy_ports: frames of the stream received on p,
 * and copies sent out of p, pass through instance 1 + p), and the individual recovery
 * function fed by port p (instance individual[p], 0 = none; one instance can be fed by several
 * ports, as the YANG's sequence-recovery `port` list says). */
struct frer_stream {
	__u32 flags;     /* FRER_STREAM_* */
	__u8 n_outputs;  /* 0 drops the stream */
	__u8 pad;
	__u16 copies;    /* XDP, more than one output: its output ports' entry of xdp_copies */
	__u32 rcvy_ports;
	__u32 rcvy_base; /* its instance 0's entry of `rcvy` */
	__u8 individual[FRER_MAX_PORTS];
	struct frer_output out[FRER_MAX_OUTPUTS]; /* from byte 32: with one or two outputs, all a
						     * frame reads is in the first 64 bytes */
};

/* Sequence generation (7.4.1). Array `seqgen`, by stream index. */
struct frer_seqgen {
	__u32 next;      /* GenSeqNum is next mod 65536; incremented atomically */
	__u32 pad;
	__u64 generated; /* frames numbered */
	__u64 resets;    /* frerCpsSeqGenResets */
};

#define FRER_ALG_VECTOR 0
#define FRER_ALG_MATCH 1

/* frer_rcvy.flags */
#define FRER_RCVY_ENABLED 0x1
#define FRER_RCVY_TAKE_NO_SEQUENCE 0x2 /* frerSeqRcvyTakeNoSequence */
#define FRER_RCVY_INDIVIDUAL 0x4       /* frerSeqRcvyIndividualRecovery: discards reload the timer */

/* One sequence recovery function (7.4.2-7.4.3): configuration, state and clause-10 counters
 * under one spin lock. Array `rcvy`, entry rcvy_base + instance of its stream. 256 bytes, laid
 * out for the cache: what every packet reads or writes in the first 64 bytes, the counters of
 * rarer events in the next 64, then the history, of which a packet touches one word. The
 * history is a ring: bit (n mod 1024) stands for sequence number n; only the numbers in the
 * window RecovSeqNum-HL+1 .. RecovSeqNum may have their bit set. A management reset
 * (frerSeqRcvyReset) is asked for by incrementing the function's entry in the array map
 * `rcvy_reset_requests` (one __u32 per function, same index): the next packet finds it ahead of
 * resets_requested and resets the function under its lock, so no counter update is lost. */
struct frer_rcvy {
	struct bpf_spin_lock lock;
	__u8 algorithm;          /* FRER_ALG_* */
	__u8 flags;              /* FRER_RCVY_* */
	__u16 history_length;    /* 2..FRER_HISTORY_MAX */
	__u64 reset_timeout_ns;  /* 0 = no timeout */
	__u64 last_reload_ns;    /* when the reset timer was last reloaded */
	__u16 recov_seq;         /* RecovSeqNum */
	__u8 take_any;           /* TakeAny */
	__u8 pad;
	__u16 span;              /* numbers from the first accepted since a reset, capped at HL */
	__u16 pad2;
	__u32 resets_requested;  /* the `rcvy_reset_requests` count acted on */
	__u32 pad3;
	__u64 last_pass_ns;      /* when a tagged packet last passed */
	__u64 passed;            /* frerCpsSeqRcvyPassedPackets */
	__u64 discarded;         /* frerCpsSeqRcvyDiscardedPackets */
	/* 64 bytes on */
	__u64 out_of_order;      /* frerCpsSeqRcvyOutOfOrderPackets */
	__u64 rogue;             /* frerCpsSeqRcvyRoguePackets */
	__u64 lost;              /* frerCpsSeqRcvyLostPackets */
	__u64 tagless;           /* frerCpsSeqRcvyTaglessPackets */
	__u64 resets;            /* frerCpsSeqRcvyResets */
	__u64 last_rogue_ns;     /* when a rogue packet last arrived: a member locked out (see
				  * RecoveryParams::lockout_free_rate in crates/frer) sees only
				  * rogues, long after its last pass */
	__u64 pad4[2];
	/* 128 bytes on */
	__u64 history[FRER_HISTORY_WORDS];
};

/* Per-stream filtering and policing (802.1Qci 8.6.5.1, 8.6.5.3): what a received frame of a
 * filtered stream goes through before its FRER functions. The filter of stream s on port p is
 * entry filter_of[s * port_stride + p] - 1 of `filters` (0: none). 8 bytes. */
struct frer_filter {
	__u32 max_sdu;   /* max-sdu-size in octets, 0 = any (the SDU: frame_sdu) */
	__u32 meter;     /* its flow meter's entry of `meters` + 1, 0 = none */
};

/* frer_meter.flags */
#define FRER_METER_DROP_ON_YELLOW 0x1 /* drop-on-yellow; no frame is yellow without an EIR */

/* A flow meter (8.6.5.3; MEF 10.3 with EIR 0, colour-blind): a single-rate token bucket of
 * committed-burst-size octets filled at committed-information-rate; a frame whose SDU is
 * within the tokens is green and takes them, any other is red and dropped. Tokens are counted
 * in 1e-9 bit, so that `ns * bit/s` adds exactly what the time earned (no rounding): the loader
 * bounds the bucket (octets * 8e9) to 8e18 and cir to 1e12 bit/s, so the tokens plus what at
 * most fill_ns earns stay within 64 bits. Array `meters`, 48 bytes. */
struct frer_meter {
	struct bpf_spin_lock lock;
	__u32 flags;     /* FRER_METER_* */
	__u64 cir;       /* bit/s */
	__u64 cbs;       /* the bucket, in 1e-9 bit (octets * 8e9) */
	__u64 fill_ns;   /* how long an empty bucket takes to fill (elapsed * cir stays below
			  * cbs + cir); 2^63 - 1 for a rate of 0 */
	__u64 tokens;    /* in 1e-9 bit; a configured meter starts full */
	__u64 last_ns;   /* when tokens were last added */
};

/* Per filter counters (per-CPU array `filter_stats`, by entry of `filters`), the YANG's
 * (ieee802-dot1q-psfp) names; there is no stream gate, so a passing frame passed all. 40 bytes. */
struct frer_filter_stats {
	__u64 matching;         /* matching-frames-count */
	__u64 passing;          /* passing-frames-count: passed the SDU filter and the meter */
	__u64 passing_sdu;      /* passing-sdu-count */
	__u64 not_passing_sdu;  /* not-passing-sdu-count: above max-sdu-size, dropped */
	__u64 red;              /* red-frames-count: red at the flow meter, dropped */
};

/* Per-port counters (per-CPU array `port_stats`, by port index). */
struct frer_port_stats {
	__u64 frames;           /* frames seen by the programs on this port */
	__u64 malformed;        /* runts, truncated VLAN tags: dropped */
	__u64 seq_enc_errored;  /* frerCpSeqEncErroredPackets: an R-TAG cut short */
	__u64 rcvy_passed;      /* frerCpSeqRcvyPassedPackets */
	__u64 rcvy_discarded;   /* frerCpSeqRcvyDiscardPackets (duplicates, rogues, tagless) */
	__u64 bridged;          /* frames of no stream, plain-forwarded */
	__u64 to_stack;         /* frames of no stream, left to the kernel */
	__u64 tx_errors;        /* a copy that could not be made or sent */
	__u64 reinjected;       /* frames handed back up through this port after their R-TAG was
				 * removed (FRER_MARK_REINJECTED), seen a second time and let up */
	__u64 gso_refused;      /* GSO packets (many frames not yet segmented) a FRER function would
				 * have numbered, eliminated or re-tagged as one: dropped */
};

/* Per port and stream counters (per-CPU array `stream_port_stats`, entry
 * stream * port_stride + port),
 * by where the stream identification function sits (802.1CB 9.1.1, the YANG in-facing and
 * out-facing containers): frames received are identified out-facing (coming from the physical
 * interface), frames the host sends in-facing (coming from the system). */
struct frer_stream_port_stats {
	__u64 input;            /* tsnCpsSidInputPackets, out-facing: frames of the stream received */
	__u64 output;           /* tsnCpsSidOutputPackets, out-facing: copies sent out of this port */
	__u64 seq_enc_errored;  /* frerCpsSeqEncErroredPackets */
	__u64 input_sent;       /* tsnCpsSidInputPackets, in-facing: frames the host sent here */
};

/* One slot of `port_of_ifindex`: a port of the data plane and its interface, or a free slot
 * (ifindex 0). A port sits in the first free slot from ifindex % FRER_PORT_SLOTS on, so a
 * lookup probes from there to the port or to a free slot; an array lookup is a few inlined
 * instructions where a hash map's hashes the key (about 45 ns a frame here). 8 bytes. */
struct frer_port_slot {
	__u32 ifindex;
	__u32 port;
};

/* A learned MAC address of the plain-forwarding bridge: LRU hash `fdb`. */
struct frer_fdb_key {
	__u8 mac[6];
	__u16 pad;
};


#ifdef __bpf__
/* ---- BPF side: the maps and the per-frame logic of both hooks (frer.c: tc, frer_xdp.c: XDP),
 * written over the parsed frame and plain values so that neither hook has a FRER of its own.
 * The including file has included linux/bpf.h. ---- */
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frer_settings);
} settings SEC(".maps");

/* ifindex -> port index (struct frer_port_slot, port_of) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_PORT_SLOTS);
	__type(key, __u32);
	__type(value, struct frer_port_slot);
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

/* hashed identities (see struct frer_id_key) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FRER_MAX_HASHED);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct frer_id_key);
	__type(value, struct frer_id_hit);
} identity_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_DEFAULT_STREAMS);
	__type(key, __u32);
	__type(value, struct frer_stream);
} streams SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_DEFAULT_STREAMS);
	__type(key, __u32);
	__type(value, struct frer_seqgen);
} seqgen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_DEFAULT_STREAMS * FRER_RCVY_PER_STREAM);
	__type(key, __u32);
	__type(value, struct frer_rcvy);
} rcvy SEC(".maps");

/* management resets asked for, per recovery function (see struct frer_rcvy) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_DEFAULT_STREAMS * FRER_RCVY_PER_STREAM);
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
	__uint(max_entries, FRER_DEFAULT_STREAMS * FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct frer_stream_port_stats);
} stream_port_stats SEC(".maps");

/* stream * port_stride + port -> its filter's entry of `filters` + 1, 0 = unfiltered */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_DEFAULT_STREAMS * FRER_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} filter_of SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_FILTERS);
	__type(key, __u32);
	__type(value, struct frer_filter);
} filters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FRER_MAX_FILTERS);
	__type(key, __u32);
	__type(value, struct frer_filter_stats);
} filter_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FRER_MAX_METERS);
	__type(key, __u32);
	__type(value, struct frer_meter);
} meters SEC(".maps");

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
	__u32 frame_len;   /* the frame's length (tc: without a VLAN tag held in skb metadata) */
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

/* Parse the frame's first bytes, already copied into f->hdr (min(len, HDR_MAX) of them; len:
 * the frame's length), into f. vlan_meta: the frame has a VLAN tag outside its bytes (tc: in skb
 * metadata), with TCI vlan_tci. */
static __always_inline enum parse_result frame_parse(struct frame *f, __u32 len, int vlan_meta,
						     __u16 vlan_tci)
{
	__u32 off = 12;
	__u16 etype;

	if (len < ETH_HLEN)
		return PARSE_MALFORMED;
	f->frame_len = len;
	if (len > HDR_MAX)
		len = HDR_MAX;
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
	if (vlan_meta) {
		f->vlan = 1;
		f->vid = vlan_tci & 0x0fff;
		f->pcp = vlan_tci >> 13;
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

#define FRER_IP_FIELDS (FRER_MATCH_IP | FRER_MATCH_IPV4 | FRER_MATCH_IPV6 | FRER_MATCH_IP_SRC | \
			FRER_MATCH_IP_DST | FRER_MATCH_DSCP | FRER_MATCH_PROTO)

/* The key of frame f for shape `index` (sh) into k; 0 when the frame cannot match an identity
 * of that shape at all (its VLAN rule, or a field the frame lacks). Mirrors identity_matches:
 * python/frerlab/dataplane/layout.py makes an identity's key the same way. */
static __always_inline int frame_key(struct frer_id_key *k, const struct frer_id_shape *sh, __u32 index,
				     const struct frame *f, __u32 port, __u32 direction, __u16 pvid)
{
	__u16 m = sh->fields;
	int words = f->ip == 6 ? 4 : 1;

	__builtin_memset(k, 0, sizeof(*k));
	if (sh->vlan_mode == FRER_VLAN_TAGGED && !f->vlan)
		return 0;
	if (sh->vlan_mode == FRER_VLAN_PRIORITY && f->vlan && f->vid != 0)
		return 0;
	if ((m & FRER_IP_FIELDS) && !f->ip)
		return 0;
	if (((m & FRER_MATCH_IPV4) && f->ip != 4) || ((m & FRER_MATCH_IPV6) && f->ip != 6))
		return 0;
	if ((m & (FRER_MATCH_SPORT | FRER_MATCH_DPORT)) && !f->l4)
		return 0;
	if (!(sh->port_mask & (1u << (port & 31))))
		return 0;
	k->direction = direction;
	k->shape = index;
	if (!(sh->flags & FRER_SHAPE_ANY_VID))
		k->vid = f->vlan && f->vid ? f->vid : pvid;
	if (m & FRER_MATCH_DMAC)
		__builtin_memcpy(k->dmac, &f->hdr[0], 6);
	if (m & FRER_MATCH_SMAC)
		__builtin_memcpy(k->smac, &f->hdr[6], 6);
	if (m & (FRER_MATCH_IPV4 | FRER_MATCH_IPV6))
		k->ip = f->ip;
	for (int i = 0; i < 4; i++) {
		if (i < words && (m & FRER_MATCH_IP_SRC))
			k->ip_src[i] = f->ip_src[i];
		if (i < words && (m & FRER_MATCH_IP_DST))
			k->ip_dst[i] = f->ip_dst[i];
	}
	if (m & FRER_MATCH_DSCP)
		k->dscp = f->dscp;
	if (m & FRER_MATCH_PROTO)
		k->proto = f->proto;
	if (m & FRER_MATCH_SPORT)
		k->sport = f->sport;
	if (m & FRER_MATCH_DPORT)
		k->dport = f->dport;
	return 1;
}

/* The stream index of the frame in `scratch`, or -1 when no identity matches: the identity
 * first in the node's order (lowest position) among those that match. One identity_hash lookup
 * per shape in use gives the first hashed match; the scan of `identities` (in order) then stops
 * at its first match or at an entry placed after the hashed one. A global function, so the
 * verifier checks it once on its own. */
__attribute__((noinline)) int frer_identify(__u32 port, __u32 direction)
{
	__u32 zero = 0, best = FRER_MAX_STREAMS; /* past every position (a __u16) */
	struct frer_settings *s = bpf_map_lookup_elem(&settings, &zero);
	struct frame *f = bpf_map_lookup_elem(&scratch, &zero);
	struct frer_id_key k;
	int sid = -1;

	if (!s || !f)
		return -1;
	__u16 pvid = s->pvid[port & (FRER_MAX_PORTS - 1)];

	for (__u32 i = 0; i < FRER_MAX_SHAPES; i++) {
		if (i >= s->n_shapes)
			break;
		if (!frame_key(&k, &s->shape[i], i, f, port, direction, pvid))
			continue;
		struct frer_id_hit *hit = bpf_map_lookup_elem(&identity_hash, &k);

		if (hit && hit->position < best) {
			best = hit->position;
			sid = hit->stream;
		}
	}
	for (__u32 i = 0; i < FRER_MAX_IDENTITIES; i++) {
		__u32 key = i; /* i itself stays in a register, where the verifier sees it grow */

		if (i >= s->n_identities)
			break;
		struct frer_identity *id = bpf_map_lookup_elem(&identities, &key);

		if (!id || id->position >= best)
			break;
		if (identity_matches(id, f, port, direction, pvid)) {
			sid = id->stream;
			break;
		}
	}
	return sid < FRER_MAX_STREAMS ? sid : -1;
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

/* The positions lo .. hi-1 of the doubled ring (2048 positions: position p and p + 1024 are the
 * same bit) that fall in the 64 positions from base. */
static __always_inline __u64 range_mask(__s64 lo, __s64 hi, __s64 base)
{
	return low_bits(clamp64(hi - base)) & ~low_bits(clamp64(lo - base));
}

/* Move the vector window forward by delta (1 <= delta < HL). The numbers that leave it are
 * RecovSeqNum-HL+1 .. RecovSeqNum-HL+delta; each one left unseen counts as lost if it came
 * after the first number accepted since the last reset (the newest `span` numbers). Their
 * bits are cleared, so only numbers inside the window ever have a bit set. The leaving range
 * is handled in a doubled ring of 2048 positions, so it never wraps, and only the words it
 * covers are read (one for the usual delta of 1). */
static __always_inline void vector_advance(struct frer_rcvy *r, __u32 delta)
{
	__s64 hl = r->history_length;
	__s64 skip = hl - r->span; /* leaving numbers from before the first accepted one */
	__s64 start = (__u16)(r->recov_seq - hl + 1) & (FRER_HISTORY_MAX - 1);
	__s64 counted_from = start + (skip < delta ? skip : delta);
	__s64 end = start + delta;
	__s64 first = start >> 6, last = (end - 1) >> 6;
	__u64 seen = 0;

	for (int i = 0; i <= FRER_HISTORY_WORDS; i++) {
		__s64 pos = first + i, base = pos * 64;
		__u32 w = pos & (FRER_HISTORY_WORDS - 1);

		if (pos > last)
			break;
		__u64 word = r->history[w];

		seen += __builtin_popcountll(word & range_mask(counted_from, end, base));
		r->history[w] = word & ~range_mask(start, end, base);
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

/* ---- what both hooks do with a frame of a stream ---- */

/* The port index of interface `ifindex`, or -1 when it is none of the data plane's. */
static __always_inline int port_of(__u32 ifindex)
{
	for (__u32 i = 0; i < FRER_MAX_PORTS; i++) {
		__u32 slot = (ifindex + i) & (FRER_PORT_SLOTS - 1);
		struct frer_port_slot *ps = bpf_map_lookup_elem(&port_of_ifindex, &slot);

		if (!ps || !ps->ifindex)
			return -1;
		if (ps->ifindex == ifindex)
			return ps->port & (FRER_MAX_PORTS - 1);
	}
	return -1;
}

static __always_inline struct frer_port_stats *port_stats_of(__u32 port)
{
	return bpf_map_lookup_elem(&port_stats, &port);
}

/* The counters of a stream on a port; NULL only past the end of stream_port_stats. */
static __always_inline struct frer_stream_port_stats *sp_stats_of(__u32 stream, __u32 port)
{
	__u32 zero = 0;
	struct frer_settings *s = bpf_map_lookup_elem(&settings, &zero);
	__u32 key;

	if (!s)
		return 0;
	key = stream * s->port_stride + port;
	return bpf_map_lookup_elem(&stream_port_stats, &key);
}

/* frer_identify's answer for a parsed frame `f` on `port`, except that a frame whose R-TAG is
 * malformed gives FRER_BAD_RTAG, counted as SequenceEncodeErrored on the port and, when it
 * was identified, on the stream's port: both hooks then drop it. */
#define FRER_BAD_RTAG (-2)
static __always_inline int frer_identify_tagged(__u32 port, __u32 direction, const struct frame *f,
						 struct frer_port_stats *ps)
{
	struct frer_stream_port_stats *sp;
	int sid = frer_identify(port, direction);

	if (!f->rtag_bad)
		return sid;
	ps->seq_enc_errored++;
	if (sid >= 0 && (sp = sp_stats_of(sid, port)))
		sp->seq_enc_errored++;
	return FRER_BAD_RTAG;
}

/* The time for the recovery functions of a stream of flags `stream_flags`. */
static __always_inline __u64 now_ns(const struct frer_settings *s, __u32 stream_flags)
{
	if (s->flags & FRER_SETTING_FIXED_CLOCK)
		return s->fixed_now_ns;
	if (stream_flags & FRER_STREAM_COARSE_CLOCK)
		return bpf_ktime_get_coarse_ns();
	return bpf_ktime_get_ns();
}

/* ---- per-stream filtering and policing (802.1Qci 8.6.5.1, 8.6.5.3) ---- */

/* The frame's SDU size in octets, as max-sdu-size and the flow meters count it: what follows
 * its MACs, VLAN tags and R-TAG (its EtherType and payload; no FCS), so a frame measures the
 * same on either hook, tagged or not, with or without its R-TAG. */
static __always_inline __u32 frame_sdu(const struct frame *f)
{
	__u32 head = f->l2_end + (f->rtag ? FRER_RTAG_LEN : 0);

	return f->frame_len > head ? f->frame_len - head : 0;
}

/* One frame of `sdu` octets through flow meter `key` of map meters at time now (the precise
 * clock: a coarse tick's worth of tokens can exceed the bucket, so the coarse clock would cap
 * the rate). Adds the tokens the time since the last frame earned (a full bucket after fill_ns),
 * then takes the frame's if there are enough: VERDICT_PASS (green) or VERDICT_DISCARD (red;
 * also for a meter that is not there). A global function, so the verifier checks it once. */
__attribute__((noinline)) int frer_meter(__u32 key, __u32 sdu, __u64 now)
{
	struct frer_meter *m = bpf_map_lookup_elem(&meters, &key);
	__u64 cost = (__u64)sdu * 8000000000ull;
	int v = VERDICT_DISCARD;

	if (!m)
		return VERDICT_DISCARD;
	bpf_spin_lock(&m->lock);
	/* `now` was read before the lock: another CPU may have stored a later one meanwhile */
	__s64 elapsed = (__s64)(now - m->last_ns);
	if (elapsed > 0) {
		/* below fill_ns, elapsed * cir < cbs + cir: the sum stays within 64 bits */
		__u64 filled = (__u64)elapsed >= m->fill_ns ? m->cbs : m->tokens + elapsed * m->cir;

		m->tokens = filled < m->cbs ? filled : m->cbs;
		m->last_ns = now;
	}
	if (m->tokens >= cost) {
		m->tokens -= cost;
		v = VERDICT_PASS;
	}
	bpf_spin_unlock(&m->lock);
	return v;
}

/* A received frame of stream `stream` (entry st) on `port` through the stream's filter on that
 * port, if it has one: VERDICT_DISCARD (counted) for a frame above max-sdu-size or red at the
 * filter's flow meter, else VERDICT_PASS. */
static __always_inline int frer_filter(const struct frer_settings *s, const struct frer_stream *st,
				       __u32 stream, __u32 port, const struct frame *f)
{
	__u32 key = stream * s->port_stride + port, index, sdu;
	struct frer_filter_stats *fs;
	struct frer_filter *flt;
	__u32 *slot;

	if (!(st->flags & FRER_STREAM_FILTERED))
		return VERDICT_PASS;
	slot = bpf_map_lookup_elem(&filter_of, &key);
	if (!slot || !*slot)
		return VERDICT_PASS;
	index = *slot - 1;
	flt = bpf_map_lookup_elem(&filters, &index);
	fs = bpf_map_lookup_elem(&filter_stats, &index);
	if (!flt || !fs)
		return VERDICT_DISCARD;
	fs->matching++;
	sdu = frame_sdu(f);
	if (flt->max_sdu && sdu > flt->max_sdu) {
		fs->not_passing_sdu++;
		return VERDICT_DISCARD;
	}
	fs->passing_sdu++;
	if (flt->meter) {
		__u64 now = now_ns(s, 0); /* the precise clock, even where the stream's recovery reads the coarse one */

		if (frer_meter(flt->meter - 1, sdu, now) == VERDICT_DISCARD) {
			fs->red++;
			return VERDICT_DISCARD;
		}
	}
	fs->passing++;
	return VERDICT_PASS;
}

/* The frame's sequence number (has_seq: it has one) and the time, for the recovery functions
 * it passes through; base: the stream's instance 0's `rcvy` index. */
struct recovery_ctx {
	__u32 base;
	__u32 has_seq;
	__u32 seq;
	__u64 now;
};

/* A frame of stream `stream` (entry st) received on (or sent from) `port`: sequence generation,
 * then the member stream's individual recovery, the sequence recovery on this port and the
 * compound stream's. Fills rc for the recovery functions on the output ports. Returns
 * VERDICT_PASS, or VERDICT_DISCARD (counted) when the frame is to be dropped. */
static __always_inline int frer_stream_in(const struct frer_settings *s, const struct frer_stream *st,
					  __u32 stream, __u32 port, const struct frame *f,
					  struct frer_port_stats *ps, struct recovery_ctx *rc)
{
	rc->base = st->rcvy_base;
	rc->has_seq = f->rtag;
	rc->seq = f->seq;
	rc->now = 0;
	if (st->flags & FRER_STREAM_GENERATE) {
		struct frer_seqgen *g = bpf_map_lookup_elem(&seqgen, &stream);

		if (!g)
			return VERDICT_DISCARD;
		rc->seq = (__u16)__sync_fetch_and_add(&g->next, 1);
		__sync_fetch_and_add(&g->generated, 1);
		rc->has_seq = 1;
	}
	if ((st->flags & (FRER_STREAM_INDIVIDUAL | FRER_STREAM_RECOVER)) || st->rcvy_ports) {
		__u32 individual = st->individual[port % FRER_MAX_PORTS];

		rc->now = now_ns(s, st->flags);
		if (((st->flags & FRER_STREAM_INDIVIDUAL) && individual &&
		     frer_recover(rc->base + individual, rc->has_seq, rc->seq, rc->now) == VERDICT_DISCARD) ||
		    ((st->rcvy_ports & (1u << port)) &&
		     frer_recover(rc->base + 1 + port, rc->has_seq, rc->seq, rc->now) == VERDICT_DISCARD) ||
		    ((st->flags & FRER_STREAM_RECOVER) &&
		     frer_recover(rc->base, rc->has_seq, rc->seq, rc->now) == VERDICT_DISCARD)) {
			if (rc->has_seq)
				ps->rcvy_discarded++;
			return VERDICT_DISCARD;
		}
		ps->rcvy_passed++;
	}
	return VERDICT_PASS;
}

/* Whether the copy of the stream leaving by out_port is discarded by a sequence recovery
 * function of the stream placed on that port (counted there). */
static __always_inline int frer_output_discards(const struct frer_stream *st, __u32 out_port,
						const struct recovery_ctx *rc)
{
	struct frer_port_stats *ops;

	if (!(st->rcvy_ports & (1u << out_port)) ||
	    frer_recover(rc->base + 1 + out_port, rc->has_seq, rc->seq, rc->now) != VERDICT_DISCARD)
		return 0;
	ops = port_stats_of(out_port);
	if (ops)
		ops->rcvy_discarded++;
	return 1;
}

/* The frame's first `len` bytes as parsed (its MACs and in-frame VLAN tags) followed by an
 * R-TAG with seq (EtherType F1C1, reserved 0, sequence number), into head: what the front of
 * the frame becomes when the tag is pushed. `len` is a constant where it is inlined. */
static __always_inline void frer_tagged_head(__u8 *head, const struct frame *f, __u16 seq,
					     const __u32 len)
{
	__builtin_memcpy(head, f->hdr, len);
	head[len] = FRER_RTAG_ETHERTYPE >> 8;
	head[len + 1] = FRER_RTAG_ETHERTYPE & 0xff;
	head[len + 2] = 0;
	head[len + 3] = 0;
	head[len + 4] = seq >> 8;
	head[len + 5] = seq & 0xff;
}

/* The PCP of the outer VLAN tag a copy leaves with, or -1 for an untagged copy: the tag an
 * active identity gives it carries the configured priority, else the frame's class (frame_pcp:
 * its tag's PCP, -1 untagged; priority: the skb's priority, tc only, else 8), 0 if it has none;
 * without one the copy keeps the frame's own tag. */
static __always_inline int copy_pcp(const struct frer_output *o, int frame_pcp, __u32 priority)
{
	if (!(o->flags & FRER_OUT_SET_VID))
		return frame_pcp;
	if (o->flags & FRER_OUT_SET_PCP)
		return o->pcp & 7;
	if (frame_pcp >= 0)
		return frame_pcp;
	return priority < 8 ? priority : 0;
}

/* Where the learning bridge sends a frame of no stream received on `port`. */
enum bridge_action { BRIDGE_STACK, BRIDGE_DROP, BRIDGE_UNICAST, BRIDGE_FLOOD };

/* Learns the frame's source MAC on `port` and looks its destination up; under BRIDGE_UNICAST,
 * *ifindex is the port to send it out of. Not a bridge port: the kernel's (BRIDGE_STACK). */
static __always_inline enum bridge_action bridge_lookup(const struct frer_settings *s,
							const struct frame *f, __u32 port,
							struct frer_port_stats *ps, __u32 *ifindex)
{
	struct frer_fdb_key key = {};
	__u32 *dst_port;

	if (!(s->bridge_ports & (1u << port))) {
		ps->to_stack++;
		return BRIDGE_STACK;
	}
	ps->bridged++;
	__builtin_memcpy(key.mac, &f->hdr[6], 6);
	if (!(key.mac[0] & 1))
		bpf_map_update_elem(&fdb, &key, &port, BPF_ANY);
	__builtin_memcpy(key.mac, &f->hdr[0], 6);
	dst_port = (key.mac[0] & 1) ? 0 : bpf_map_lookup_elem(&fdb, &key);
	if (dst_port) {
		__u32 p = *dst_port;
		__u32 *out = bpf_map_lookup_elem(&ifindex_of_port, &p);

		if (p == port)
			return BRIDGE_DROP;
		if (out && (s->bridge_ports & (1u << (p & 31)))) {
			*ifindex = *out;
			return BRIDGE_UNICAST;
		}
	}
	return BRIDGE_FLOOD;
}

#endif /* __bpf__ */

#endif
