//! An attacker on member path A of the dual-path scenario (talker -> sw1 -> {A, B} -> sw2 ->
//! listener, generation at sw1, recovery at sw2 with history 32): what 802.1CB's recovery
//! algorithms (7.4.3.4 vector, 7.4.3.5 match, as crates/frer implements them) make of forged,
//! replayed, babbled and tagless frames.
//!
//! The stream sends 1518-byte frames at 100 Mbit/s (about 8,127 frames/s, one every 123 us,
//! 12.3 us on each 1 Gbit/s wire) for 100 ms; an attacker sends one frame every millisecond
//! from 10 ms to 90 ms, far below the stream's rate, so two of its frames never take the same
//! number.

mod common;

use common::*;
use frersim::report::Report;
use serde_json::{json, Value};

const MS: u64 = SEC / 1000;

/// The dual-path scenario with `algorithm` at sw2 and `attack` on path A.
fn attacked(algorithm: &str, attack: Value) -> Report {
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["streams"][0]["recovery"][0]["algorithm"] = json!(algorithm);
    spec["ports"][1]["attacks"] = json!([attack]);
    run(&spec)
}

/// An attack that sends a frame every millisecond from 10 ms to 90 ms.
fn sending(action: Value) -> Value {
    json!({"stream": 0, "start": 10 * MS, "end": 90 * MS, "every": MS, "action": action})
}

/// (lost, duplicates, forged_delivered) at the listener, the frames the attacker sent or
/// stripped, and the frames the talker sent.
fn harm(report: &Report) -> ((u64, u64, u64), u64, u64) {
    let s = &report.streams[0];
    assert_eq!(report.attacks.len(), 1);
    let frames = report.attacks[0].frames;
    assert!(frames >= 79, "the attacker saw the stream: {frames}");
    ((s.lost, s.duplicates, s.forged_delivered), frames, s.sent)
}

#[test]
fn vector_inject_inside_the_window_costs_one_genuine_frame_per_forged_frame() {
    // offset >= 2: when the attacker sends, the genuine frame with the forged number has not
    // left the talker, so the forged one passes first (delta = offset < history length) and the
    // genuine one's two copies are duplicates later.
    for offset in [2, 4, 31] {
        let report = attacked(
            "vector",
            sending(json!({"kind": "inject", "offset": offset})),
        );
        let ((lost, duplicates, forged), injected, sent) = harm(&report);
        assert_eq!(
            (lost, duplicates, forged),
            (injected, 0, injected),
            "offset {offset}"
        );
        let c = &report.frer[0].counters;
        assert_eq!(
            (c.passed_packets, c.discarded_packets, c.rogue_packets),
            (sent, sent + injected, 0),
            "offset {offset}: {c:?}"
        );
    }
}

#[test]
fn vector_inject_outside_the_window_is_rogue_and_harmless() {
    // |delta| >= history length (32): rogue, whichever way round the 16-bit space. The genuine
    // frame after the one the attacker saw may pass before the forged one arrives, so delta
    // is offset - 1 at worst: an offset of 32 would sometimes pass, push the window 31 ahead
    // and let every later forged frame in.
    for offset in [33, 1000, 40_000] {
        let report = attacked(
            "vector",
            sending(json!({"kind": "inject", "offset": offset})),
        );
        let ((lost, duplicates, forged), injected, sent) = harm(&report);
        assert_eq!((lost, duplicates, forged), (0, 0, 0), "offset {offset}");
        let c = &report.frer[0].counters;
        assert_eq!(
            (c.rogue_packets, c.discarded_packets, c.passed_packets),
            (injected, sent, sent),
            "offset {offset}: {c:?}"
        );
    }
}

/// The whole stream cut from 20 ms to 30 ms, longer than its 5 ms reset timeout, and one forged
/// frame 1000 ahead at 29 ms on path B, the first after the reset: the scenario, and the
/// genuine frames the cut alone loses.
fn after_reset() -> (Value, u64) {
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["ports"][0]["failures"] = json!([[20 * MS, 30 * MS]]);
    spec["streams"][0]["recovery"][0]["reset_timeout"] = json!(5 * MS);
    let outage = run(&spec).streams[0].lost;
    spec["ports"][1]["attacks"] = json!([{"stream": 0, "start": 29 * MS, "end": 30 * MS,
        "every": MS, "action": {"kind": "inject", "offset": 1000}}]);
    (spec, outage)
}

#[test]
fn vector_inject_far_ahead_right_after_a_reset_makes_genuine_frames_rogue_until_the_next() {
    // The whole stream is cut from 20 ms to 30 ms; the 5 ms reset timeout has expired when one
    // forged frame, 1000 ahead, arrives at 29 ms: TakeAny accepts it and every genuine frame
    // is rogue until the timer, reloaded by that pass, runs out at 34 ms.
    let (spec, outage) = after_reset();
    let report = run(&spec);
    let s = &report.streams[0];
    let c = &report.frer[0].counters;
    let harm = s.lost - outage;
    let frames_per_ms = (GBIT / 10) as f64 / (1538.0 * 8.0) / 1000.0;
    assert!(
        (harm as f64 - 4.0 * frames_per_ms).abs() <= 1.0,
        "{harm} genuine frames lost to the forged one, {outage} to the outage"
    );
    assert_eq!(
        (c.rogue_packets, c.resets, s.forged_delivered),
        (2 * harm, 2, 1),
        "{c:?}"
    );
}

#[test]
fn a_replay_passes_match_recovery_and_vector_recovery_discards_it() {
    // Match compares with the last number only: a replay of the frame 10 before passes, and the
    // next genuine frame, 11 after it, passes too (both out of order).
    let replay = sending(json!({"kind": "replay", "age": 10}));
    let report = attacked("match", replay.clone());
    let ((lost, duplicates, forged), replayed, sent) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, 0, replayed));
    let c = &report.frer[0].counters;
    assert_eq!(
        (
            c.passed_packets,
            c.discarded_packets,
            c.out_of_order_packets
        ),
        (sent + replayed, sent, 2 * replayed),
        "{c:?}"
    );
    // Vector remembers the window: the replayed number is a duplicate.
    let report = attacked("vector", replay);
    let ((lost, duplicates, forged), replayed, sent) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, 0, 0));
    let c = &report.frer[0].counters;
    assert_eq!(c.discarded_packets, sent + replayed, "{c:?}");
    // Older than the window: rogue.
    let report = attacked("vector", sending(json!({"kind": "replay", "age": 40})));
    let (_, replayed, _) = harm(&report);
    assert_eq!(report.frer[0].counters.rogue_packets, replayed);
}

#[test]
fn vector_recovery_discards_a_babbled_frame_as_a_duplicate() {
    let report = attacked("vector", sending(json!({"kind": "babble"})));
    let ((lost, duplicates, forged), babbled, sent) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, 0, 0));
    assert_eq!(report.frer[0].counters.discarded_packets, sent + babbled);
}

#[test]
fn stripped_frames_are_tagless_at_recovery_and_the_other_path_carries_the_stream() {
    let strip = json!({"stream": 0, "start": 10 * MS, "end": 90 * MS,
        "action": {"kind": "strip_tag"}});
    let report = attacked("vector", strip.clone());
    let ((lost, duplicates, forged), stripped, sent) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, 0, 0));
    let c = &report.frer[0].counters;
    assert_eq!(
        (c.tagless_packets, c.passed_packets, c.discarded_packets),
        (stripped, sent, sent - stripped),
        "{c:?}"
    );
    // frerSeqRcvyTakeNoSequence passes tagless frames: each stripped one is a duplicate.
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["streams"][0]["recovery"][0]["take_no_sequence"] = json!(true);
    spec["ports"][1]["attacks"] = json!([strip]);
    let report = run(&spec);
    let ((lost, duplicates, forged), stripped, _) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, stripped, 0));
}

#[test]
fn an_attack_on_a_stream_that_does_not_exist_is_refused() {
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["ports"][1]["attacks"] = json!([sending(json!({"kind": "babble"}))]);
    spec["ports"][1]["attacks"][0]["stream"] = json!(1);
    let spec: frersim::Spec = serde_json::from_value(spec).unwrap();
    let err = frersim::Simulation::new(&spec).err().unwrap();
    assert_eq!(err, "port A: babble attack: stream 1 out of range (0..1)");
}

// ---- Defences (802.1Qci policing of path A at sw2, the rogue-rate guard) and the named cases.

/// The SDU of the stream's 1518-byte frames: less the MACs and the FCS.
const SDU: u64 = 1518 - 16;

/// Path A policed at sw2: a stream filter over A with a meter of `rate` bit/s and `burst` bytes.
fn police(spec: &mut Value, rate: u64, burst: u64) {
    spec["streams"][0]["filters"] =
        json!([{"node": 2, "ingress": 1, "meter": {"rate": rate, "burst": burst}}]);
}

/// The recovery function at sw2 guarded every `period` with `threshold`, resetting if `reset`.
fn guard(spec: &mut Value, period: u64, threshold: u64, reset: bool) {
    spec["streams"][0]["recovery"][0]["guard"] =
        json!({"threshold": threshold, "period": period, "reset": reset});
}

/// The dual-path scenario with `algorithm` at sw2, `attack` on path A and a defence.
fn defended(algorithm: &str, attack: Value, defence: impl FnOnce(&mut Value)) -> Report {
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["streams"][0]["recovery"][0]["algorithm"] = json!(algorithm);
    spec["ports"][1]["attacks"] = json!([attack]);
    defence(&mut spec);
    run(&spec)
}

/// The meter the tests police path A with: 110 Mbit/s of SDU (the stream's copies on A take
/// 97.7 Mbit/s of it: 8,127 frames/s of 1,502 octets) and a burst of two frames.
const POLICE_RATE: u64 = 110_000_000;
const POLICE_BURST: u64 = 2 * SDU;

#[test]
fn policing_bounds_what_a_babbler_puts_before_recovery_to_the_meter() {
    // 10,000 babbled frames/s from 10 ms to 90 ms (800), far above the meter's headroom: what
    // passes the filter (genuine and babbled alike) stays within rate x time + burst.
    let babble = json!({"stream": 0, "start": 10 * MS, "end": 90 * MS, "every": MS / 10,
        "action": {"kind": "babble"}});
    for algorithm in ["vector", "match"] {
        let open = defended(algorithm, babble.clone(), |_| {});
        let report = defended(algorithm, babble.clone(), |s| {
            police(s, POLICE_RATE, POLICE_BURST)
        });
        let f = &report.filters[0].counters;
        let end = report.run.simulated_seconds;
        let bound = (POLICE_RATE as f64 * end / 8.0 + POLICE_BURST as f64) / SDU as f64;
        assert!(
            (f.passing_frames as f64) <= bound,
            "{algorithm}: {} frames passed A's filter, bound {bound:.1}",
            f.passing_frames
        );
        assert_eq!(f.passing_octets, f.passing_frames * SDU);
        assert_eq!(f.matching_frames, f.passing_frames + f.red_frames);
        let (s, o) = (&report.streams[0], &open.streams[0]);
        assert_eq!(
            (s.lost, s.duplicates),
            (0, 0),
            "{algorithm}: path B carries it"
        );
        let babbled = report.attacks[0].frames;
        assert_eq!(babbled, 800);
        if algorithm == "match" {
            // Unpoliced, each babbled copy that follows the next genuine frame passes; policed,
            // only those the meter lets through can.
            assert!(s.forged_delivered < o.forged_delivered / 4, "{s:?} {o:?}");
        }
    }
}

#[test]
fn the_guard_ends_the_lock_out_after_inject_after_reset_within_about_two_periods() {
    // The cut and the forged frame of the test above; a guard every millisecond (threshold 4
    // rogue frames) sees the locked-out function pass nothing and resets it.
    let (mut spec, outage) = after_reset();
    let frames_per_ms = (GBIT / 10) as f64 / (1538.0 * 8.0) / 1000.0;
    let unguarded = run(&spec).streams[0].lost - outage;
    let mut watching = spec.clone();
    guard(&mut watching, MS, 4, false);
    let watched = run(&watching);
    guard(&mut spec, MS, 4, true);
    let report = run(&spec);
    let harm = report.streams[0].lost - outage;
    let f = &report.frer[0];
    assert!(
        harm as f64 <= 2.0 * frames_per_ms && harm > 0,
        "{harm} genuine frames lost with the guard, {unguarded} without"
    );
    assert_eq!(
        (f.guard_alarms, f.guard_locked_out, f.guard_resets),
        (1, 1, 1)
    );
    assert_eq!(report.streams[0].forged_delivered, 1);
    // Watching only: the alarms, the same harm as unguarded.
    let w = &watched.frer[0];
    assert_eq!(watched.streams[0].lost - outage, unguarded);
    assert!(w.guard_alarms >= 2 && w.guard_resets == 0, "{w:?}");
    // Match counts no rogue frames: nothing for the guard to see, and no harm to stop.
    spec["streams"][0]["recovery"][0]["algorithm"] = json!("match");
    let report = run(&spec);
    assert_eq!(report.streams[0].lost, outage);
    assert_eq!(report.frer[0].guard_alarms, 0);
}

#[test]
fn the_guard_raises_alarms_beside_an_old_replay_and_resets_nothing() {
    let report = defended(
        "vector",
        sending(json!({"kind": "replay", "age": 40})),
        |s| guard(s, MS, 0, true),
    );
    let ((lost, duplicates, forged), replayed, _) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, 0, 0));
    let f = &report.frer[0];
    assert_eq!(
        (f.guard_alarms, f.guard_resets, f.counters.rogue_packets),
        (replayed, 0, replayed)
    );
}

#[test]
fn neither_defence_stops_inject_inside_the_window() {
    // 1000 forged frames/s fit the meter's headroom; none is rogue, so the guard is silent.
    let inject = sending(json!({"kind": "inject", "offset": 4}));
    for algorithm in ["vector", "match"] {
        let policed = defended(algorithm, inject.clone(), |s| {
            police(s, POLICE_RATE, POLICE_BURST)
        });
        let guarded = defended(algorithm, inject.clone(), |s| guard(s, MS, 4, true));
        for report in [&policed, &guarded] {
            let ((lost, duplicates, forged), injected, _) = harm(report);
            let expected_lost = if algorithm == "vector" { injected } else { 0 };
            assert_eq!(
                (lost, duplicates, forged),
                (expected_lost, 0, injected),
                "{algorithm}"
            );
        }
        assert_eq!(policed.filters[0].counters.red_frames, 0);
        assert_eq!(guarded.frer[0].guard_alarms, 0);
    }
}

#[test]
fn a_replay_across_the_wrap_is_taken_as_eight_ahead() {
    // 64-byte frames at 100 Mbit/s (L1): 148,810 frames/s, so the 16-bit numbers wrap after
    // 0.44 s. From 0.5 s a replay of the frame 65536 - 8 before the last one carries the last
    // number + 8: vector takes it as 8 ahead (the stale frame delivered, the genuine frame with
    // that number discarded later as its duplicate); match delivers it too, and loses nothing.
    for algorithm in ["vector", "match"] {
        let mut spec = dual_path(SEC * 6 / 10, GBIT / 10, 64);
        spec["streams"][0]["recovery"][0]["algorithm"] = json!(algorithm);
        spec["ports"][1]["attacks"] = json!([{"stream": 0, "start": 500 * MS,
            "end": 580 * MS, "every": MS, "action": {"kind": "replay", "age": 65536 - 8}}]);
        let report = run(&spec);
        let s = &report.streams[0];
        let replayed = report.attacks[0].frames;
        assert_eq!(replayed, 80);
        let lost = if algorithm == "vector" { replayed } else { 0 };
        assert_eq!(
            (s.lost, s.duplicates, s.forged_delivered),
            (lost, 0, replayed),
            "{algorithm}"
        );
    }
}

#[test]
fn a_forged_foreign_identity_is_not_identified_off_its_paths_and_taken_on_them() {
    // A second stream o from the talker to the listener without FRER; the attacker on A sees s
    // and forges frames with o's identity.
    let base = |o_port: u32| {
        let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
        let hops = json!([{"port": 0, "next": [1]}, {"port": o_port, "next": [2]},
            {"port": 3, "next": []}]);
        let other = stream("o", 0, 3, GBIT / 100, 1518, hops, json!([0]));
        spec["streams"].as_array_mut().unwrap().push(other);
        let mut attack = sending(json!({"kind": "inject", "offset": 4}));
        attack["identity"] = json!(1);
        spec["ports"][1]["attacks"] = json!([attack]);
        run(&spec)
    };
    // o takes path B: sw2 does not identify o on A, so it drops every forged frame there.
    let report = base(2);
    let ((lost, duplicates, forged), injected, _) = harm(&report);
    assert_eq!((lost, duplicates, forged), (0, 0, 0));
    assert_eq!(report.streams[1].forged_delivered, 0);
    let dropped: u64 = report
        .ports
        .iter()
        .filter(|p| p.port == "A")
        .map(|p| p.drop_not_identified)
        .sum();
    assert_eq!(dropped, injected);
    assert_eq!(report.attacks[0].identity, "o");
    // o takes path A: its forged frames are o's there, and o, without FRER, delivers them.
    let report = base(1);
    let ((lost, _, forged), injected, _) = harm(&report);
    assert_eq!((lost, forged), (0, 0));
    assert_eq!(report.streams[1].forged_delivered, injected);
}

#[test]
fn a_stream_filter_where_the_stream_does_not_arrive_is_refused() {
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["streams"][0]["filters"] = json!([{"node": 1, "ingress": 1}]);
    let spec: frersim::Spec = serde_json::from_value(spec).unwrap();
    let err = frersim::Simulation::new(&spec).err().unwrap();
    assert_eq!(
        err,
        "stream s: stream filter 0: ingress port 1 sends to node 2, not to the filter's node 1"
    );
}
