//! Whole-scenario behaviour: replication and elimination, failures, determinism, speed of the
//! 64-byte line-rate dual-path case.

mod common;

use common::*;
use serde_json::json;

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
