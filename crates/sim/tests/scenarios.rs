//! Whole-scenario behaviour: replication and elimination, failures, determinism, speed of the
//! 64-byte line-rate dual-path case.

mod common;

use common::*;
use serde_json::{json, Value};

#[test]
fn dual_path_frer_delivers_every_frame_once_and_discards_the_second_copies() {
    let report = run(&dual_path(SEC / 100, GBIT / 2, 1518));
    let s = &report.streams[0];
    assert!(s.sent > 0);
    assert_eq!((s.received, s.lost, s.duplicates), (s.sent, 0, 0));
    let frer = &report.frer[0];
    assert_eq!(frer.counters.passed_packets, s.sent);
    assert_eq!(frer.counters.discarded_packets, s.sent);
}

#[test]
fn without_elimination_the_listener_sees_every_frame_twice() {
    let mut spec = dual_path(SEC / 100, GBIT / 2, 1518);
    spec["streams"][0]["recovery"] = json!([]);
    let s = &run(&spec).streams[0];
    assert_eq!((s.received, s.duplicates), (s.sent, s.sent));
}

#[test]
fn a_failed_path_is_covered_by_the_other_one() {
    let mut spec = dual_path(SEC / 10, GBIT / 2, 1518);
    spec["ports"][1]["failures"] = json!([[SEC / 50, SEC / 20]]);
    let report = run(&spec);
    let s = &report.streams[0];
    assert_eq!(s.lost, 0);
    let a = report.ports.iter().find(|p| p.port == "A").unwrap();
    assert!(a.drop_link_down > 1000, "{a:?}");
    assert_eq!(
        report.frer[0].counters.discarded_packets + a.drop_link_down,
        s.sent
    );
}

#[test]
fn the_same_seed_gives_the_same_report() {
    let mut spec = dual_path(SEC / 100, GBIT / 2, 512);
    spec["ports"][1]["loss"] = json!({"model": "bernoulli", "p": 0.1});
    spec["streams"][0]["pattern"] = json!({"kind": "poisson"});
    let a = serde_json::to_value(run(&spec).streams).unwrap();
    let b = serde_json::to_value(run(&spec).streams).unwrap();
    assert_eq!(a, b);
    spec["seed"] = json!(2);
    let c = serde_json::to_value(run(&spec).streams).unwrap();
    assert_ne!(a, c);
}

#[test]
fn a_longer_path_makes_the_eliminator_deliver_out_of_order_after_a_loss() {
    // Path B is 200 us (about 8 frames) longer; A loses 5 %: frames whose A copy is lost come late via B.
    let mut spec = dual_path(SEC / 100, GBIT / 2, 1518);
    spec["ports"][2]["delay"] = json!(200_000_000u64);
    spec["ports"][1]["loss"] = json!({"model": "bernoulli", "p": 0.05});
    let report = run(&spec);
    let s = &report.streams[0];
    assert_eq!(s.lost, 0);
    assert!(s.reordered > 0);
    assert_eq!(s.duplicates, 0);
    // The eliminator counts late copies it discards as out of order too.
    assert!(report.frer[0].counters.out_of_order_packets >= s.reordered);
}

#[test]
fn invalid_history_length_is_reported_with_the_valid_range() {
    let mut spec = dual_path(SEC / 100, GBIT / 2, 1518);
    spec["streams"][0]["recovery"][0]["history_length"] = json!(1);
    let spec: frersim::Spec = serde_json::from_value(spec).unwrap();
    let err = frersim::Simulation::new(&spec).err().unwrap();
    assert!(
        err.contains("history_length 1 is out of range (2..=1024)"),
        "{err}"
    );
}

#[test]
fn individual_recovery_on_a_member_stream_removes_its_own_duplicates_before_the_merge() {
    // SW1 sends every frame twice on A (a babbling path) and once on B. Individual recovery
    // on SW2's ingress from A drops A's second copies and keeps the R-TAG; the compound
    // sequence recovery then eliminates the B copies.
    let mut spec = dual_path(SEC / 100, GBIT / 4, 512);
    spec["streams"][0]["hops"] = json!([
        {"port": 0, "next": [1, 2, 3]},
        {"port": 1, "next": [4]},
        {"port": 1, "next": [5]},
        {"port": 2, "next": [6]},
        {"port": 3, "next": []},
        {"port": 3, "next": []},
        {"port": 3, "next": []},
    ]);
    spec["streams"][0]["recovery"] = json!([
        {"node": 2, "ingress": 1, "algorithm": "vector", "history_length": 32, "individual": true},
        {"node": 2, "algorithm": "vector", "history_length": 32},
    ]);
    let report = run(&spec);
    let s = &report.streams[0];
    assert!(s.sent > 0);
    assert_eq!((s.received, s.duplicates, s.lost), (s.sent, 0, 0));
    let (member, compound) = (&report.frer[0], &report.frer[1]);
    assert!(member.individual && member.ingress.as_deref() == Some("A"));
    assert_eq!(
        (
            member.counters.passed_packets,
            member.counters.discarded_packets
        ),
        (s.sent, s.sent)
    );
    assert_eq!(
        (
            compound.counters.passed_packets,
            compound.counters.discarded_packets,
            compound.counters.tagless_packets
        ),
        (s.sent, s.sent, 0)
    );
}

/// talker(0) -> sw1(1) -> {A1, B1} -> sw2(2) -> {A2, B2} -> sw3(3) -> listener(4): a ladder of
/// two stages, numbered and replicated at sw1, recovered at sw2 (which passes the frame on with
/// its R-TAG, `keep_tag`, and replicates it again) and at sw3. The route tree has a subtree
/// under each of A1 and B1, since either copy may be the one sw2 passes.
fn two_stage_ladder(duration_ps: u64, keep_tag: bool) -> Value {
    let ports = json!([
        port("talker-sw1", 0, 1, GBIT),
        port("A1", 1, 2, GBIT),
        port("B1", 1, 2, GBIT),
        port("A2", 2, 3, GBIT),
        port("B2", 2, 3, GBIT),
        port("sw3-listener", 3, 4, GBIT),
    ]);
    let hops = json!([
        {"port": 0, "next": [1, 2]},
        {"port": 1, "next": [3, 4]},
        {"port": 2, "next": [5, 6]},
        {"port": 3, "next": [7]},
        {"port": 4, "next": [8]},
        {"port": 3, "next": [9]},
        {"port": 4, "next": [10]},
        {"port": 5, "next": []},
        {"port": 5, "next": []},
        {"port": 5, "next": []},
        {"port": 5, "next": []},
    ]);
    let mut s = stream("s", 0, 4, GBIT / 4, 512, hops, json!([0]));
    s["generation"] = json!(1);
    s["rtag_bytes"] = json!(6);
    s["recovery"] = json!([
        {"node": 2, "algorithm": "vector", "history_length": 32, "keep_tag": keep_tag},
        {"node": 3, "algorithm": "vector", "history_length": 32},
    ]);
    let nodes = json!([
        node("talker"),
        node("sw1"),
        node("sw2"),
        node("sw3"),
        node("listener")
    ]);
    scenario(duration_ps, nodes, ports, json!([s]))
}

#[test]
fn a_recovery_that_keeps_the_tag_lets_a_ladder_recover_at_every_stage() {
    // A1 is down for the first 60 % of the run, B2 for the last 60 %: in the middle 20 % one
    // path of each stage is down, and only recovery and replication at sw2 delivers those frames.
    let duration = SEC / 100;
    let mut spec = two_stage_ladder(duration, true);
    spec["ports"][1]["failures"] = json!([[0, duration * 6 / 10]]);
    spec["ports"][4]["failures"] = json!([[duration * 4 / 10, duration]]);
    let report = run(&spec);
    let s = &report.streams[0];
    assert!(s.sent > 500);
    assert_eq!((s.received, s.lost, s.duplicates), (s.sent, 0, 0));
    let port = |name: &str| report.ports.iter().find(|p| p.port == name).unwrap();
    let (a1, b2) = (port("A1"), port("B2"));
    assert!(a1.drop_link_down > 0 && b2.drop_link_down > 0);
    let (sw2, sw3) = (&report.frer[0], &report.frer[1]);
    assert!(sw2.keep_tag && !sw3.keep_tag);
    // sw2 passes one copy of every frame and discards the copies A1 did not lose; it sends
    // exactly one copy of each frame on each of A2 and B2 (tx_frames counts the ones a down
    // link loses too); sw3 sees every frame numbered.
    assert_eq!(sw2.counters.passed_packets, s.sent);
    assert_eq!(sw2.counters.discarded_packets, s.sent - a1.drop_link_down);
    assert_eq!((port("A2").tx_frames, b2.tx_frames), (s.sent, s.sent));
    assert_eq!(
        (
            sw3.counters.passed_packets,
            sw3.counters.discarded_packets,
            sw3.counters.tagless_packets
        ),
        (s.sent, s.sent - b2.drop_link_down, 0)
    );
    // The R-TAG stays on to sw3 and comes off there: the listener's link carries plain frames.
    assert_eq!(port("sw3-listener").tx_bytes, s.sent * 512);
    assert_eq!(port("A2").tx_bytes, s.sent * 518);
}

#[test]
fn a_recovery_that_takes_the_tag_off_leaves_the_next_stage_only_tagless_frames() {
    let report = run(&two_stage_ladder(SEC / 1000, false));
    let s = &report.streams[0];
    assert!(s.sent > 0);
    assert_eq!(s.received, 0);
    assert_eq!(report.frer[1].counters.tagless_packets, 2 * s.sent);
}
