//! Sequence recovery throughput: frerlab's vector (history 32 and 1024) and match algorithms
//! against two hash-set eliminators, all fed the same two-path arrival sequence in the same
//! run, rounds interleaved so machine noise hits every contender alike. Prints the best
//! packets/s of each and the ratios.
//!
//! Baselines: "naive" is the obvious eliminator, a hash set of the numbers seen, which must
//! forget a number once the number half the sequence space ahead arrives, or it would discard
//! everything after the first wrap; "windowed" is a stronger one that remembers only the last
//! 32 distinct numbers, so its set stays in L1 cache.
//!
//! Run: `cargo bench -p frer --bench frer_recovery` (see docs/PERFORMANCE.md).

use std::collections::{HashSet, VecDeque};
use std::hint::black_box;
use std::time::Instant;

use frer::recovery::{Algorithm, RecoveryParams, SequenceRecovery};
use frer::SeqNum;

const NUMBERS: usize = 4_000_000;
const ROUNDS: usize = 5;

/// Two paths, the second 3 frames behind the first, 1 % loss each (xorshift, fixed seed),
/// wrapping past 65535 many times: the arrival order a listener's eliminator sees.
fn two_path_arrivals() -> Vec<SeqNum> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut lost = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state.is_multiple_of(100)
    };
    let mut arrivals = Vec::with_capacity(2 * NUMBERS);
    for i in 0..NUMBERS {
        if !lost() {
            arrivals.push(SeqNum(i as u16));
        }
        if i >= 3 && !lost() {
            arrivals.push(SeqNum((i - 3) as u16));
        }
    }
    arrivals
}

/// The naive baseline: remembers the last `window` distinct numbers in a hash set.
struct NaiveEliminator {
    seen: HashSet<u16>,
    order: VecDeque<u16>,
    window: usize,
}

impl NaiveEliminator {
    fn receive(&mut self, seq: SeqNum) -> bool {
        if !self.seen.insert(seq.0) {
            return false;
        }
        self.order.push_back(seq.0);
        if self.order.len() > self.window {
            let oldest = self.order.pop_front().expect("order is not empty");
            self.seen.remove(&oldest);
        }
        true
    }
}

type Contender = (&'static str, Box<dyn FnMut(&[SeqNum]) -> u64>);

/// Best packets/s of each contender over ROUNDS interleaved rounds, and what each passed.
fn measure(arrivals: &[SeqNum], contenders: &mut [Contender]) -> Vec<(f64, u64)> {
    let mut results = vec![(0.0f64, 0u64); contenders.len()];
    for _ in 0..ROUNDS {
        for ((_, run), result) in contenders.iter_mut().zip(&mut results) {
            let start = Instant::now();
            let passed = black_box(run(black_box(arrivals)));
            let pps = arrivals.len() as f64 / start.elapsed().as_secs_f64();
            *result = (result.0.max(pps), passed);
        }
    }
    for ((name, _), (pps, passed)) in contenders.iter().zip(&results) {
        println!(
            "{name:<30} {:>8.1} M packets/s   ({passed} passed of {})",
            pps / 1e6,
            arrivals.len()
        );
    }
    results
}

fn hash_set(window: usize) -> impl FnMut(&[SeqNum]) -> u64 {
    move |arrivals| {
        let mut naive = NaiveEliminator {
            seen: HashSet::new(),
            order: VecDeque::new(),
            window,
        };
        arrivals.iter().filter(|seq| naive.receive(**seq)).count() as u64
    }
}

fn recovery(algorithm: Algorithm, history_length: u16) -> impl FnMut(&[SeqNum]) -> u64 {
    move |arrivals| {
        let params = RecoveryParams {
            algorithm,
            history_length,
            ..RecoveryParams::default()
        };
        let mut rcvy = SequenceRecovery::new(params).expect("valid parameters");
        for (t, seq) in arrivals.iter().enumerate() {
            black_box(rcvy.receive(Some(*seq), t as u64));
        }
        rcvy.counters().passed_packets
    }
}

fn main() {
    let arrivals = two_path_arrivals();
    println!(
        "sequence recovery, {} arrivals of {NUMBERS} numbers over two paths, best of {ROUNDS} interleaved rounds",
        arrivals.len()
    );
    let mut contenders: Vec<Contender> = vec![
        (
            "vector, history 32",
            Box::new(recovery(Algorithm::Vector, 32)),
        ),
        (
            "vector, history 1024",
            Box::new(recovery(Algorithm::Vector, 1024)),
        ),
        ("match", Box::new(recovery(Algorithm::Match, 2))),
        ("naive hash set (half space)", Box::new(hash_set(32_768))),
        ("windowed hash set (last 32)", Box::new(hash_set(32))),
    ];
    let r = measure(&arrivals, &mut contenders);
    let [vector32, vector1024, matching, naive, windowed] = [r[0], r[1], r[2], r[3], r[4]];
    assert_eq!(
        vector32.1, naive.1,
        "vector and the naive baseline must agree on what passes"
    );
    assert_eq!(vector32.1, windowed.1);
    assert_eq!(vector32.1, vector1024.1);
    println!(
        "ratio vector-32 / naive:       {:.1}x",
        vector32.0 / naive.0
    );
    println!(
        "ratio vector-1024 / naive:     {:.1}x",
        vector1024.0 / naive.0
    );
    println!(
        "ratio match / naive:           {:.1}x",
        matching.0 / naive.0
    );
    println!(
        "ratio vector-32 / windowed:    {:.1}x",
        vector32.0 / windowed.0
    );
    println!(
        "1 GbE 64-byte line rate is 1.488 M frames/s: vector-32 handles {:.0}x that on one core",
        vector32.0 / 1.488e6
    );
}
