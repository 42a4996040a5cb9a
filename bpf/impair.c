// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * frerlab's path impairment element, for kernels without netem: tc (clsact ingress,
 * direct-action) programs on the two veth ends of a path namespace. A frame entering one end
 * leaves by the other (bpf_redirect), after these decisions, in this order:
 *   down                  -> dropped;
 *   Bernoulli loss        -> dropped with probability `loss`;
 *   Gilbert-Elliott loss  -> dropped with the loss probability of the current state, then
 *                            the chain moves (good -> bad with p_good_to_bad, bad -> good
 *                            with p_bad_to_good), as netem's gemodel does;
 *   duplication           -> one extra copy with probability `duplicate`;
 *   send                  -> to the far end, or, when the direction has a delay line, to the
 *                            delay line's device, whose user-space reader (crates/impair)
 *                            holds each copy for delay +- jitter and then sends it on.
 * Every loss and duplication decision is taken here, once per frame, so switching a direction
 * between direct and delayed sending never loses or doubles a frame.
 * Probabilities are thresholds on a 32-bit random number: p * 2^32, 0 (never) ..= 2^32
 * (always). Python (python/frerlab/impair/path.py) packs these structs byte for byte.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

/* Direction 0 ("forward") enters at end a; direction 1 ("reverse") enters at end b. */
#define IMPAIR_DIRECTIONS 2

#define IMPAIR_DOWN (1u << 0)       /* drop every frame */
#define IMPAIR_BURST (1u << 1)      /* Gilbert-Elliott loss on */
#define IMPAIR_DELAY_LINE (1u << 2) /* send through the delay line */

struct impair_config {
	__u32 flags;          /* IMPAIR_* */
	__u32 out_ifindex;    /* the far end: where frames leave */
	__u32 delay_ifindex;  /* the delay line's device */
	__u32 reserved;
	__u64 loss;           /* thresholds (p * 2^32) */
	__u64 duplicate;
	__u64 good_to_bad;
	__u64 bad_to_good;
	__u64 loss_good;
	__u64 loss_bad;
};

struct impair_stats {
	__u64 frames_in;       /* frames that entered the direction */
	__u64 forwarded;       /* copies sent straight to the far end */
	__u64 delayed;         /* copies handed to the delay line */
	__u64 dropped_down;
	__u64 dropped_loss;    /* Bernoulli */
	__u64 dropped_burst;   /* Gilbert-Elliott */
	__u64 duplicated;      /* extra copies made */
	__u64 redirect_errors; /* copies the kernel refused to clone */
};

/* The Gilbert-Elliott chain of a direction. One shared state behind a spin lock, not one per
 * CPU: the model is a chain over the direction's frame sequence, and per-CPU chains would
 * each see only part of the frames, so bursts would depend on how frames spread over CPUs. */
struct impair_chain {
	struct bpf_spin_lock lock;
	__u32 bad; /* 0: good state, 1: bad state */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IMPAIR_DIRECTIONS);
	__type(key, __u32);
	__type(value, struct impair_config);
} impair_config SEC(".maps");

/* Per CPU: counting costs no atomic operation; readers add the CPUs up. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IMPAIR_DIRECTIONS);
	__type(key, __u32);
	__type(value, struct impair_stats);
} impair_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IMPAIR_DIRECTIONS);
	__type(key, __u32);
	__type(value, struct impair_chain);
} impair_chain SEC(".maps");

/* True with probability threshold / 2^32. */
static __always_inline int chance(__u64 threshold)
{
	return threshold && (__u64)bpf_get_prandom_u32() < threshold;
}

/* Gilbert-Elliott: the loss decision in the current state, then one step of the chain. The
 * random numbers are drawn first: no helper may be called while the lock is held. */
static __always_inline int burst_lost(const struct impair_config *cfg, __u32 dir)
{
	struct impair_chain *chain = bpf_map_lookup_elem(&impair_chain, &dir);
	__u64 r_loss = bpf_get_prandom_u32(), r_move = bpf_get_prandom_u32();
	__u32 bad;

	if (!chain)
		return 0;
	bpf_spin_lock(&chain->lock);
	bad = chain->bad;
	if (r_move < (bad ? cfg->bad_to_good : cfg->good_to_bad))
		chain->bad = !bad;
	bpf_spin_unlock(&chain->lock);
	return r_loss < (bad ? cfg->loss_bad : cfg->loss_good);
}

static __always_inline void count_sent(struct impair_stats *st, __u32 flags)
{
	if (flags & IMPAIR_DELAY_LINE)
		st->delayed++;
	else
		st->forwarded++;
}

static __always_inline int impair(struct __sk_buff *skb, __u32 dir)
{
	struct impair_config *cfg = bpf_map_lookup_elem(&impair_config, &dir);
	struct impair_stats *st = bpf_map_lookup_elem(&impair_stats, &dir);
	__u32 flags, target;

	if (!cfg || !st)
		return TC_ACT_SHOT;
	st->frames_in++;
	flags = cfg->flags;
	if (flags & IMPAIR_DOWN) {
		st->dropped_down++;
		return TC_ACT_SHOT;
	}
	if (chance(cfg->loss)) {
		st->dropped_loss++;
		return TC_ACT_SHOT;
	}
	if ((flags & IMPAIR_BURST) && burst_lost(cfg, dir)) {
		st->dropped_burst++;
		return TC_ACT_SHOT;
	}
	target = (flags & IMPAIR_DELAY_LINE) ? cfg->delay_ifindex : cfg->out_ifindex;
	if (!target)
		return TC_ACT_SHOT;
	if (chance(cfg->duplicate)) {
		if (bpf_clone_redirect(skb, target, 0) == 0) {
			st->duplicated++;
			count_sent(st, flags);
		} else {
			st->redirect_errors++;
		}
	}
	count_sent(st, flags);
	return bpf_redirect(target, 0);
}

SEC("tc")
int impair_forward(struct __sk_buff *skb)
{
	return impair(skb, 0);
}

SEC("tc")
int impair_reverse(struct __sk_buff *skb)
{
	return impair(skb, 1);
}

/* On the delay line's devices: the reader has its copy (AF_PACKET taps run before tc), the
 * stack gets nothing. */
SEC("tc")
int impair_sink(struct __sk_buff *skb)
{
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
