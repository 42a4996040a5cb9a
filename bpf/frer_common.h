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
/* Streams (handles) of one data plane; sizes the per-stream arrays. */
#ifndef FRER_MAX_STREAMS
#define FRER_MAX_STREAMS 64
#endif
/* Stream identities, tried in order per frame: the loop bound of identification. */
#ifndef FRER_MAX_IDENTITIES
#define FRER_MAX_IDENTITIES 32
#endif
/* Copies of one stream (stream split / replication): the issue asks for 2..8 member ports. */
#define FRER_MAX_OUTPUTS 8
/* Longest vector-algorithm history (frerSeqRcvyHistoryLength), in bits. */
#define FRER_HISTORY_MAX 1024
#define FRER_HISTORY_WORDS (FRER_HISTORY_MAX / 64)
/* Recovery instances per stream: index 0 is the compound stream's sequence recovery, index
 * 1 + p the individual recovery of the member stream arriving on port p. */
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

/* Global settings of a data plane: array map `settings`, one entry. 56 bytes. */
struct frer_settings {
	__u32 n_identities;  /* entries of `identities` in use, tried in order */
	__u32 bridge_ports;  /* mask of ports that plain-forward (learning bridge) other frames */
	__u32 flags;         /* FRER_SETTING_* */
	__u32 pad;
	__u64 fixed_now_ns;  /* the clock under FRER_SETTING_FIXED_CLOCK (vector replay) */
	__u16 pvid[FRER_MAX_PORTS]; /* per port: the VID of untagged and VID 0 frames (802.1Q 6.9) */
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
 * destination MAC + VLAN, IP) to one matcher. Array map `identities`, 64 bytes. */
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
	__u8 pad[2];
	__be32 ip_src[4]; /* IPv4 in [0], IPv6 in all four */
	__be32 ip_dst[4];
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

/* What one node does with one stream. Array map `streams`, 160 bytes. Recovery instances
 * beyond the compound one (index 0 of the stream's `rcvy` entries) are per port: a sequence
 * recovery function placed on port p (bit p of rcvy_ports: frames of the stream received on p,
 * and copies sent out of p, pass through instance 1 + p), and the individual recovery
 * function fed by port p (instance individual[p], 0 = none; one instance can be fed by several
 * ports, as the YANG's sequence-recovery `port` list says). */
struct frer_stream {
	__u32 flags;     /* FRER_STREAM_* */
	__u8 n_outputs;  /* 0 drops the stream */
	__u8 pad[3];
	struct frer_output out[FRER_MAX_OUTPUTS];
	__u32 rcvy_ports;
	__u8 individual[FRER_MAX_PORTS];
	__u32 pad2;
};

/* Sequence generation (7.4.1). Array map `seqgen`, per stream. */
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
 * under one spin lock. Array map `rcvy`, index stream * FRER_RCVY_PER_STREAM + instance.
 * The history is a ring: bit (n mod 1024) stands for sequence number n; only the numbers in
 * the window RecovSeqNum-HL+1 .. RecovSeqNum may have their bit set. 240 bytes. A management
 * reset (frerSeqRcvyReset) is asked for by incrementing the function's entry in the array map
 * `rcvy_reset_requests` (one __u32 per function): the next packet finds it ahead of
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
	__u64 history[FRER_HISTORY_WORDS];
	__u64 passed;            /* frerCpsSeqRcvyPassedPackets */
	__u64 discarded;         /* frerCpsSeqRcvyDiscardedPackets */
	__u64 out_of_order;      /* frerCpsSeqRcvyOutOfOrderPackets */
	__u64 rogue;             /* frerCpsSeqRcvyRoguePackets */
	__u64 lost;              /* frerCpsSeqRcvyLostPackets */
	__u64 tagless;           /* frerCpsSeqRcvyTaglessPackets */
	__u64 resets;            /* frerCpsSeqRcvyResets */
	__u64 last_pass_ns;      /* when a tagged packet last passed (bpf_ktime_get_ns) */
	__u64 last_rogue_ns;     /* when a rogue packet last arrived: a member locked out (see
				  * RecoveryParams::lockout_free_rate in crates/frer) sees only
				  * rogues, long after its last pass */
	__u32 resets_requested;  /* the `rcvy_reset_requests` count acted on */
	__u32 pad3;
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

/* Per port and stream counters (per-CPU array `stream_port_stats`, stream * MAX_PORTS + port),
 * by where the stream identification function sits (802.1CB 9.1.1, the YANG in-facing and
 * out-facing containers): frames received are identified out-facing (coming from the physical
 * interface), frames the host sends in-facing (coming from the system). */
struct frer_stream_port_stats {
	__u64 input;            /* tsnCpsSidInputPackets, out-facing: frames of the stream received */
	__u64 output;           /* tsnCpsSidOutputPackets, out-facing: copies sent out of this port */
	__u64 seq_enc_errored;  /* frerCpsSeqEncErroredPackets */
	__u64 input_sent;       /* tsnCpsSidInputPackets, in-facing: frames the host sent here */
};

/* A learned MAC address of the plain-forwarding bridge: LRU hash `fdb`. */
struct frer_fdb_key {
	__u8 mac[6];
	__u16 pad;
};

#endif
