//! Properties of sequence recovery over arbitrary inputs (proptest).

use frer::recovery::{Algorithm, RecoveryParams, SequenceRecovery, Verdict};
use frer::SeqNum;
use proptest::prelude::*;

/// A stream of `n` numbers from `start` sent over `k` paths, each path in order with its own
/// delay (in frame slots), arbitrary per-path losses, but never `max_gap` consecutive numbers
/// lost on every path. Returns the arrivals in time order and which numbers arrived at all.
fn multipath_arrivals(
    start: u16,
    delays: &[u16],
    lost: &[Vec<bool>],
    max_gap: usize,
) -> (Vec<SeqNum>, Vec<bool>) {
    let n = lost[0].len();
    let mut arrived = vec![false; n];
    let mut arrivals = Vec::new();
    let mut run = 0;
    for i in 0..n {
        let mut any = false;
        for (p, delay) in delays.iter().enumerate() {
            let delivered = !lost[p][i] || (p == 0 && run + 1 >= max_gap && !any_other(lost, i));
            if delivered {
                arrivals.push((i * 16 + usize::from(*delay) * 16 + p, i));
                any = true;
            }
        }
        run = if any { 0 } else { run + 1 };
        arrived[i] = any;
    }
    arrivals.sort();
    let seqs = arrivals
        .iter()
        .map(|&(_, i)| SeqNum(start.wrapping_add(i as u16)))
        .collect();
    (seqs, arrived)
}

fn any_other(lost: &[Vec<bool>], i: usize) -> bool {
    lost[1..].iter().any(|path| !path[i])
}

fn params_strategy() -> impl Strategy<Value = RecoveryParams> {
    (
        prop_oneof![Just(Algorithm::Vector), Just(Algorithm::Match)],
        2u16..=1024,
        proptest::option::of(1u64..5_000),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(algorithm, history_length, reset_timeout_ns, individual, take_no_sequence)| {
                RecoveryParams {
                    algorithm,
                    history_length,
                    reset_timeout_ns,
                    individual_recovery: individual,
                    take_no_sequence,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// With k paths and any loss pattern, every number that arrives at least once within the
    /// window passes exactly once, across the 65535 -> 0 wrap too.
    #[test]
    fn every_number_that_arrives_in_the_window_passes_exactly_once(
        history_length in 8u16..=1024,
        start in any::<u16>(),
        k in 2usize..=4,
        n in 1usize..600,
        seed_delays in proptest::collection::vec(0u16..1024, 4),
        loss_rate in 0.0f64..0.9,
        seed in any::<u64>(),
    ) {
        let quarter = history_length / 4;
        let delays: Vec<u16> = seed_delays[..k].iter().map(|d| d % quarter).collect();
        let mut rng = seed;
        let mut lost = vec![vec![false; n]; k];
        for path in lost.iter_mut() {
            for slot in path.iter_mut() {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                *slot = ((rng >> 11) as f64 / (1u64 << 53) as f64) < loss_rate;
            }
        }
        let (arrivals, arrived) = multipath_arrivals(start, &delays, &lost, usize::from(quarter));
        let mut rcvy = SequenceRecovery::new(RecoveryParams { history_length, ..Default::default() }).unwrap();
        let mut passes = vec![0u32; n];
        for seq in &arrivals {
            if rcvy.receive(Some(*seq), 0).is_pass() {
                passes[usize::from(seq.0.wrapping_sub(start))] += 1;
            }
        }
        for i in 0..n {
            prop_assert_eq!(passes[i], u32::from(arrived[i]), "number {} (offset {})", start.wrapping_add(i as u16), i);
        }
        let c = rcvy.counters();
        prop_assert_eq!(c.rogue_packets, 0);
        let never = arrived.iter().filter(|a| !**a).count() as u64;
        prop_assert!(c.lost_packets <= never, "lost {} > never arrived {}", c.lost_packets, never);
    }

    /// Every received packet lands in exactly one of passed / discarded / rogue /
    /// tagless-dropped, whatever the parameters, numbers, times and resets.
    #[test]
    fn every_packet_is_counted_exactly_once(
        params in params_strategy(),
        packets in proptest::collection::vec((proptest::option::of(any::<u16>()), 0u64..3_000, any::<bool>(), 0u8..50), 0..400),
    ) {
        let mut rcvy = SequenceRecovery::new(params.clone()).unwrap();
        let (mut now, mut verdicts) = (0u64, [0u64; 4]);
        let mut management_resets = 0;
        for (seq, gap, near, reset) in packets {
            now += gap;
            if reset == 0 {
                rcvy.reset();
                management_resets += 1;
            }
            // Keep half the numbers close together so the window logic is exercised too.
            let seq = seq.map(|s| SeqNum(if near { s % 64 } else { s }));
            let v = rcvy.receive(seq, now);
            verdicts[match v { Verdict::Pass => 0, Verdict::Duplicate => 1, Verdict::Rogue => 2, Verdict::Tagless => 3 }] += 1;
        }
        let c = *rcvy.counters();
        let tagless_dropped = if params.take_no_sequence { 0 } else { c.tagless_packets };
        prop_assert_eq!(verdicts, [c.passed_packets, c.discarded_packets, c.rogue_packets, tagless_dropped]);
        prop_assert!(c.resets >= management_resets);
        if params.algorithm == Algorithm::Match {
            prop_assert_eq!(c.rogue_packets + c.lost_packets, 0, "match has no rogue or lost");
        }
    }
}
