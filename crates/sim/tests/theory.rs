//! Validation against queueing theory and the definitions of the shapers: M/M/1 and M/D/1
//! mean sojourn time (Pollaczek-Khinchine), delivered loss p^2 over two independently lossy
//! paths, loss 1 - C/L of a saturated FIFO, the queue-length series of a port fed at twice its
//! rate (a linear ramp up to the queue limit, then the drain), idleSlope throughput of a
//! saturated CBS class, and no transmission outside its class's gate windows under TAS.

mod common;

use common::*;
use serde_json::{json, Value};

/// talker(0) -> listener(1) over one port of `rate`, no L1 overhead: a single FIFO server.
fn single_queue(duration_ps: u64, rate: u64, load: f64, frame_size: Value) -> Value {
    let mut p = port("q", 0, 1, rate);
    p["overhead"] = json!(0);
    let mut s = stream(
        "s",
        0,
        1,
        (load * rate as f64) as u64,
        0,
        json!([{"port": 0, "next": []}]),
        json!([0]),
    );
    s["frame_size"] = frame_size;
    s["pattern"] = json!({"kind": "poisson"});
    s["rate_counts_l1"] = json!(false);
    let mut spec = scenario(
        duration_ps,
        json!([node("talker"), node("listener")]),
        json!([p]),
        json!([s]),
    );
    spec["interval"] = json!(duration_ps / 40);
    spec["warmup"] = json!(duration_ps / 40);
    spec
}

/// Mean of the per-interval mean latencies (batch means, first batch dropped as warm-up) and
/// the half-width of its 99 % confidence interval, in nanoseconds.
fn batch_mean_ci(spec: &Value) -> (f64, f64) {
    let report = run(spec);
    let batches: Vec<f64> = report
        .series
        .iter()
        .skip(1)
        .filter(|r| r.received > 1000)
        .map(|r| r.latency_mean_ns.unwrap())
        .collect();
    let n = batches.len() as f64;
    assert!(n >= 30.0, "only {n} batches");
    let mean = batches.iter().sum::<f64>() / n;
    let var = batches.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, 2.71 * (var / n).sqrt()) // t(0.995, ~38 dof)
}

#[test]
fn mm1_mean_sojourn_time_matches_theory() {
    // S exponential with mean 1000 bytes at 1 Gbit/s: E[S] = 8 us; rho = 0.6: W = E[S]/(1-rho).
    let spec = single_queue(
        4 * SEC,
        GBIT,
        0.6,
        json!({"dist": "exponential", "mean": 1000.0}),
    );
    let (mean, half) = batch_mean_ci(&spec);
    let theory = 8000.0 / (1.0 - 0.6);
    assert!(
        (mean - theory).abs() < half,
        "M/M/1 W = {mean:.1} +- {half:.1} ns, theory {theory:.1} ns"
    );
    assert!(
        half < 0.03 * theory,
        "confidence interval too wide to mean anything: {half}"
    );
}

#[test]
fn md1_mean_sojourn_time_matches_pollaczek_khinchine() {
    // S = 8 us fixed, rho = 0.7: W = S + rho S / (2 (1 - rho)).
    let spec = single_queue(4 * SEC, GBIT, 0.7, json!({"dist": "fixed", "bytes": 1000}));
    let (mean, half) = batch_mean_ci(&spec);
    let theory = 8000.0 + 0.7 * 8000.0 / (2.0 * 0.3);
    assert!(
        (mean - theory).abs() < half,
        "M/D/1 W = {mean:.1} +- {half:.1} ns, theory {theory:.1} ns"
    );
    assert!(
        half < 0.03 * theory,
        "confidence interval too wide to mean anything: {half}"
    );
}

#[test]
fn two_paths_with_independent_loss_p_deliver_loss_p_squared() {
    let p = 0.1;
    let mut spec = dual_path(SEC / 2, GBIT / 2, 64);
    spec["ports"][1]["loss"] = json!({"model": "bernoulli", "p": p});
    spec["ports"][2]["loss"] = json!({"model": "bernoulli", "p": p});
    let s = &run(&spec).streams[0];
    let n = s.sent as f64;
    let sd = (n * p * p * (1.0 - p * p)).sqrt() / n;
    assert!(s.sent > 300_000);
    assert!(
        (s.loss_ratio - p * p).abs() < 2.58 * sd,
        "loss {} vs p^2 {} (99 % CI +- {})",
        s.loss_ratio,
        p * p,
        2.58 * sd
    );
}

#[test]
fn gilbert_elliott_burst_loss_has_its_stationary_loss_rate() {
    // Loss only in the bad state: long-run loss = P(bad) = g / (g + b) = 0.001 / 0.01.
    let mut spec = dual_path(SEC / 2, GBIT / 2, 64);
    let ge = json!({"model": "gilbert_elliott", "p_good_to_bad": 0.001, "p_bad_to_good": 0.009, "loss_good": 0.0, "loss_bad": 1.0});
    spec["ports"][1]["loss"] = ge;
    spec["streams"][0]["recovery"] = json!([]);
    spec["streams"][0]["first_hops"] = json!([0]);
    spec["streams"][0]["hops"][0]["next"] = json!([1]);
    let report = run(&spec);
    let a = report.ports.iter().find(|p| p.port == "A").unwrap();
    let loss = a.drop_link_loss as f64 / a.tx_frames as f64;
    assert!(
        (loss - 0.1).abs() < 0.01,
        "Gilbert-Elliott loss {loss}, stationary 0.1"
    );
}

#[test]
fn a_saturated_fifo_loses_one_minus_capacity_over_load() {
    let mut spec = dual_path(SEC / 5, GBIT, 512);
    spec["ports"][1]["rate"] = json!(GBIT / 2);
    spec["ports"][1]["queue_limits"][0] = json!(4096);
    spec["streams"][0]["recovery"] = json!([]);
    spec["streams"][0]["generation"] = Value::Null;
    spec["streams"][0]["hops"][0]["next"] = json!([1]);
    let s = &run(&spec).streams[0];
    assert!(
        (s.loss_ratio - 0.5).abs() < 0.002,
        "loss {} vs 1 - C/L = 0.5",
        s.loss_ratio
    );
}

#[test]
fn a_port_fed_at_twice_its_rate_ramps_its_queue_to_the_limit_and_an_idle_port_stays_empty() {
    // 1000-byte frames (no L1 overhead) every 4 us into a 1 Gbit/s port that sends one per
    // S = 8 us: F floor((t + S/2) / S) bytes wait, a ramp of one frame per S. Over an interval
    // of 100 S from a to b, the mean is the ramp's value at (a + b) / 2 and the maximum its
    // value at b; the limit of 250 frames holds it flat from 250 S until the talker stops at
    // 300 S, then the queue drains one frame per S (the level at an interval's first instant,
    // before that instant's departure, counts as its maximum). The talker's 600 frames end
    // at 300 S, half the scenario's duration, so the series (which stop at the duration)
    // show the drain.
    let interval = SEC / 1250;
    let mut q = port("q", 0, 1, GBIT);
    q["overhead"] = json!(0);
    q["queue_limits"][0] = json!(250_000);
    let mut s = stream(
        "s",
        0,
        1,
        2 * GBIT,
        1000,
        json!([{"port": 0, "next": []}]),
        json!([0]),
    );
    s["rate_counts_l1"] = json!(false);
    s["count"] = json!(600);
    let mut spec = scenario(
        6 * interval,
        json!([node("talker"), node("listener")]),
        json!([q, port("back", 1, 0, GBIT)]),
        json!([s]),
    );
    spec["interval"] = json!(interval);
    let report = run(&spec);
    let series = |port: &str| -> Vec<(u64, f64)> {
        report
            .port_series
            .iter()
            .filter(|r| r.port == port)
            .map(|r| (r.queue_max_bytes, r.queue_mean_bytes))
            .collect()
    };
    let ramp = [
        (100_000, 50_000.0),
        (200_000, 150_000.0),
        (250_000, 237_500.0),
    ];
    let drain = [
        (250_000, 199_500.0),
        (150_000, 99_500.0),
        (50_000, 12_250.0),
    ];
    assert_eq!(series("q"), [ramp, drain].concat());
    assert_eq!(series("back"), [(0, 0.0); 6]);
    assert_eq!(report.ports[0].max_queue_bytes, 250_000);
}

/// Two talkers, each saturating its own 1 Gbit/s link, into one 1 Gbit/s switch port:
/// class 3 (shaped by CBS with `idle_slope`) and class 0 (best effort).
fn cbs_contention(idle_slope: u64) -> Value {
    let mut out = port("out", 2, 3, GBIT);
    out["idle_slopes"][3] = json!(idle_slope);
    for c in [0, 3] {
        out["queue_limits"][c] = json!(200_000);
    }
    let ports = json!([port("a", 0, 2, GBIT), port("b", 1, 2, GBIT), out]);
    let mut shaped = stream(
        "shaped",
        0,
        3,
        GBIT,
        1000,
        json!([{"port": 0, "next": [1]}, {"port": 2, "next": []}]),
        json!([0]),
    );
    shaped["class"] = json!(3);
    let be = stream(
        "be",
        1,
        3,
        GBIT,
        1500,
        json!([{"port": 1, "next": [1]}, {"port": 2, "next": []}]),
        json!([0]),
    );
    scenario(
        SEC / 5,
        json!([node("t1"), node("t2"), node("sw"), node("l")]),
        ports,
        json!([shaped, be]),
    )
}

#[test]
fn a_saturated_cbs_class_gets_its_idle_slope() {
    let report = run(&cbs_contention(300_000_000));
    // Listener throughput (L2, by arrival) in the intervals while both talkers send, as L1.
    let l1_rate = |stream: &str, bytes: f64| {
        let rows: Vec<f64> = report
            .series
            .iter()
            .filter(|r| r.stream == stream)
            .skip(1)
            .take(8)
            .map(|r| r.throughput_bps)
            .collect();
        rows.iter().sum::<f64>() / rows.len() as f64 * (bytes + 20.0) / bytes
    };
    let shaped = l1_rate("shaped", 1000.0);
    let best_effort = l1_rate("be", 1500.0);
    assert!(
        (shaped / 300e6 - 1.0).abs() < 0.01,
        "CBS class got {shaped} bit/s, idleSlope 300 Mbit/s"
    );
    assert!(
        (best_effort / 700e6 - 1.0).abs() < 0.01,
        "best effort got {best_effort} bit/s, 700 Mbit/s left"
    );
}

#[test]
fn under_tas_no_frame_starts_or_ends_outside_its_gate_window() {
    // Cycle 1 ms: class 7 open for the first 300 us, classes 0-6 for the remaining 700 us.
    let mut spec = cbs_contention(GBIT);
    spec["ports"][2]["idle_slopes"][3] = Value::Null;
    spec["ports"][2]["gate_control"] =
        json!({"entries": [[0x80, 300_000_000u64], [0x7f, 700_000_000u64]]});
    spec["ports"][2]["queue_limits"][7] = json!(200_000);
    spec["streams"][0]["class"] = json!(7);
    spec["duration"] = json!(SEC / 50);
    spec["trace"] = json!(true);
    let report = run(&spec);
    let cycle = 1_000_000.0;
    let mut sent = [0u64; 8];
    for t in report
        .trace
        .iter()
        .filter(|t| t.port == "out" && t.drop.is_none())
    {
        let (start, end) = (
            t.start_ns % cycle,
            t.start_ns % cycle + (t.end_ns - t.start_ns),
        );
        let (open, close) = if t.class == 7 {
            (0.0, 300_000.0)
        } else {
            (300_000.0, cycle)
        };
        assert!(
            start >= open && end <= close,
            "class {} sent {}..{} ns outside [{open}, {close})",
            t.class,
            t.start_ns,
            t.end_ns
        );
        sent[usize::from(t.class)] += 1;
    }
    assert!(
        sent[7] > 500 && sent[0] > 500,
        "both classes should send: {sent:?}"
    );
}
