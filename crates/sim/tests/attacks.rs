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

#[test]
fn vector_inject_far_ahead_right_after_a_reset_makes_genuine_frames_rogue_until_the_next() {
    // The whole stream is cut from 20 ms to 30 ms; the 5 ms reset timeout has expired when one
    // forged frame, 1000 ahead, arrives at 29 ms: TakeAny accepts it and every genuine frame
    // is rogue until the timer, reloaded by that pass, runs out at 34 ms.
    let mut spec = dual_path(SEC / 10, GBIT / 10, 1518);
    spec["ports"][0]["failures"] = json!([[20 * MS, 30 * MS]]);
    spec["streams"][0]["recovery"][0]["reset_timeout"] = json!(5 * MS);
    let outage = run(&spec).streams[0].lost;
    spec["ports"][1]["attacks"] = json!([{"stream": 0, "start": 29 * MS, "end": 30 * MS,
        "every": MS, "action": {"kind": "inject", "offset": 1000}}]);
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
