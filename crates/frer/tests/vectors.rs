//! Replays the shared 802.1CB test vectors (tests/vectors/*.json) through the Rust core: every
//! verdict and the final counters must match.

use std::path::PathBuf;

use frer::recovery::{check_reset_timeout, Algorithm, RecoveryParams, SequenceRecovery};
use frer::SeqNum;
use serde::Deserialize;

#[derive(Deserialize)]
struct Vector {
    name: String,
    recovery: Params,
    events: Vec<Event>,
    counters: std::collections::BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct Params {
    algorithm: String,
    history_length: u16,
    reset_timeout_ns: Option<i64>,
    individual_recovery: bool,
    take_no_sequence: bool,
}

#[derive(Deserialize)]
struct Event {
    t_ns: u64,
    #[serde(default)]
    op: Option<String>,
    #[serde(default)]
    seq: Option<u16>,
    #[serde(default)]
    expect: Option<String>,
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn replay(vector: &Vector) {
    let p = &vector.recovery;
    let params = RecoveryParams {
        algorithm: p.algorithm.parse::<Algorithm>().unwrap(),
        history_length: p.history_length,
        reset_timeout_ns: check_reset_timeout(p.reset_timeout_ns).unwrap(),
        individual_recovery: p.individual_recovery,
        take_no_sequence: p.take_no_sequence,
    };
    let mut rcvy = SequenceRecovery::new(params).unwrap();
    for (i, event) in vector.events.iter().enumerate() {
        if event.op.as_deref() == Some("reset") {
            rcvy.reset();
            continue;
        }
        let verdict = rcvy.receive(event.seq.map(SeqNum), event.t_ns);
        assert_eq!(
            Some(verdict.as_str()),
            event.expect.as_deref(),
            "{}: event {i} (seq {:?} at {} ns)",
            vector.name,
            event.seq,
            event.t_ns
        );
    }
    let got: std::collections::BTreeMap<String, u64> = rcvy
        .counters()
        .entries()
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    assert_eq!(got, vector.counters, "{}: final counters", vector.name);
}

#[test]
fn every_shared_vector_gives_the_same_verdicts_and_counters() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(vectors_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let vector: Vector = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            replay(&vector);
            names.push(vector.name);
        }
    }
    assert!(
        names.len() >= 10,
        "expected the shared vectors, found {names:?}"
    );
}
