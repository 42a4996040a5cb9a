//! Scenario builders shared by the integration tests: small topologies written as JSON specs.

use frersim::report::Report;
use frersim::{Simulation, Spec};
use serde_json::{json, Value};

/// 1 Gbit/s.
pub const GBIT: u64 = 1_000_000_000;
/// Picoseconds per second.
pub const SEC: u64 = 1_000_000_000_000;

/// A port (one direction of a link) from node `from` to node `to`.
pub fn port(name: &str, from: u32, to: u32, rate: u64) -> Value {
    json!({
        "name": name, "from": from, "to": to, "rate": rate, "delay": 0, "overhead": 20,
        "queue_limits": [null, null, null, null, null, null, null, null],
        "idle_slopes": [null, null, null, null, null, null, null, null],
    })
}

/// A node without buffer limits.
pub fn node(name: &str) -> Value {
    json!({"name": name})
}

/// A constant-rate stream of fixed-size frames on the given route tree.
pub fn stream(
    name: &str,
    source: u32,
    destination: u32,
    rate: u64,
    bytes: u32,
    hops: Value,
    first: Value,
) -> Value {
    json!({
        "name": name, "source": source, "destination": destination, "class": 0,
        "frame_size": {"dist": "fixed", "bytes": bytes}, "pattern": {"kind": "constant"},
        "rate": rate, "rate_counts_l1": true, "hops": hops, "first_hops": first,
    })
}

/// A whole scenario.
pub fn scenario(duration_ps: u64, nodes: Value, ports: Value, streams: Value) -> Value {
    json!({
        "seed": 1, "duration": duration_ps, "interval": duration_ps / 10,
        "nodes": nodes, "ports": ports, "streams": streams,
    })
}

/// Runs a scenario and returns its report.
pub fn run(spec: &Value) -> Report {
    let spec: Spec = serde_json::from_value(spec.clone()).expect("spec matches the schema");
    let mut sim = Simulation::new(&spec).expect("valid scenario");
    sim.run();
    sim.report()
}

/// talker(0) -> sw1(1) -> {A, B} -> sw2(2) -> listener(3), replication at sw1 and
/// elimination at sw2, 1 Gbit/s everywhere; returns the scenario for `rate` and `bytes`.
pub fn dual_path(duration_ps: u64, rate: u64, bytes: u32) -> Value {
    let ports = json!([
        port("talker-sw1", 0, 1, GBIT),
        port("A", 1, 2, GBIT),
        port("B", 1, 2, GBIT),
        port("sw2-listener", 2, 3, GBIT),
    ]);
    let hops = json!([
        {"port": 0, "next": [1, 2]},
        {"port": 1, "next": [3]},
        {"port": 2, "next": [4]},
        {"port": 3, "next": []},
        {"port": 3, "next": []},
    ]);
    let mut s = stream("s", 0, 3, rate, bytes, hops, json!([0]));
    s["generation"] = json!(1);
    s["rtag_bytes"] = json!(6);
    s["recovery"] = json!([{"node": 2, "algorithm": "vector", "history_length": 32}]);
    scenario(
        duration_ps,
        json!([node("talker"), node("sw1"), node("sw2"), node("listener")]),
        ports,
        json!([s]),
    )
}
