//! Congestion control against what it must do: IEEE 802.3x PAUSE loses nothing where tail
//! drop loses frames; QCN (IEEE 802.1Qau) brings N identical sources on one 10 Gbit/s
//! bottleneck to the fair share C/N with the hotspot queue around Qeq (the behaviour of the
//! QCN fluid model and simulations of Alizadeh et al., Allerton 2008); the congestion point
//! samples by its table, so its sample count follows a formula.

#[allow(dead_code)] // the shared builders not used here
mod common;

use common::*;
use serde_json::{json, Value};

const TEN_G: u64 = 10 * GBIT;
const MS: u64 = SEC / 1000;
const US: u64 = SEC / 1_000_000;

/// `n` talkers (nodes 0..n) -> switch (n) -> listener (n + 1), all links 10 Gbit/s with 1 us
/// of propagation delay, each link's two directions ports 2i (towards the switch or the
/// listener) and 2i + 1; every talker sends 1500-byte frames at 10 Gbit/s (L1) to the listener.
fn incast(n: u32, duration_ps: u64) -> Value {
    let (sw, dst) = (n, n + 1);
    let mut nodes = Vec::new();
    let mut ports = Vec::new();
    let mut streams = Vec::new();
    for i in 0..n {
        nodes.push(node(&format!("h{i}")));
        ports.push(port(&format!("h{i}->sw"), i, sw, TEN_G));
        ports.push(port(&format!("sw->h{i}"), sw, i, TEN_G));
    }
    nodes.push(node("sw"));
    nodes.push(node("dst"));
    ports.push(port("sw->dst", sw, dst, TEN_G));
    ports.push(port("dst->sw", dst, sw, TEN_G));
    for p in &mut ports {
        p["delay"] = json!(US);
    }
    let bottleneck = 2 * n;
    for i in 0..n {
        let hops = json!([{"port": 2 * i, "next": [1]}, {"port": bottleneck, "next": []}]);
        streams.push(stream(
            &format!("s{i}"),
            i,
            dst,
            TEN_G,
            1500,
            hops,
            json!([0]),
        ));
    }
    let mut spec = scenario(duration_ps, json!(nodes), json!(ports), json!(streams));
    spec["interval"] = json!(MS);
    spec
}

fn with_pause(spec: &mut Value, n: u32) {
    for i in 0..n as usize {
        spec["ports"][2 * i]["pause"] =
            json!({"reverse": 2 * i + 1, "xoff": 20_000, "xon": 10_000, "quanta": 65535});
    }
}

fn with_qcn(spec: &mut Value, n: u32, jitter: f64) {
    spec["ports"][2 * n as usize]["qcn"] = json!({"qeq": 26_000, "w": 2.0, "jitter": jitter});
    for s in spec["streams"].as_array_mut().unwrap() {
        s["qcn"] = json!({
            "gd": 1.0 / 128.0, "byte_counter": 150_000, "timer": 15 * MS, "fast_recovery": 5,
            "active_increase": 5_000_000, "hyper_increase": 50_000_000, "min_rate": 5_000_000,
        });
    }
}

#[test]
fn pause_makes_a_two_to_one_incast_into_a_small_buffer_lossless() {
    // 100 KB at the bottleneck; per ingress, xoff 20 KB plus the headroom of one round trip
    // (2 us of 10 Gbit/s = 2.5 KB) and two frames in flight stays far below half of it.
    let mut spec = incast(2, 2 * MS);
    spec["ports"][4]["queue_limits"][0] = json!(100_000);
    let without = run(&spec);
    let lost: u64 = without.streams.iter().map(|s| s.lost).sum();
    let sent: u64 = without.streams.iter().map(|s| s.sent).sum();
    assert!(
        lost > sent / 4,
        "2:1 overload without PAUSE loses about half: {lost} of {sent}"
    );

    with_pause(&mut spec, 2);
    let report = run(&spec);
    for s in &report.streams {
        assert!(s.sent > 1000);
        assert_eq!((s.lost, s.received), (0, s.sent), "{}", s.stream);
    }
    assert!(report.ports.iter().all(|p| p.drop_queue_full == 0));
    for p in &report.pause {
        assert!(p.xoff_frames > 0 && p.xon_frames > 0, "{p:?}");
        assert_eq!(p.pause_bytes, 64 * (p.xoff_frames + p.xon_frames));
        assert!(p.ingress_peak_bytes < 30_000, "{p:?}");
        // Each talker gets half of the bottleneck, so it is paused about half of the 2 ms the
        // sources run; the drain after them (about as long again) is not counted.
        assert!(p.paused_s > 0.8e-3 && p.paused_s < 1.2e-3, "{p:?}");
    }
    let bottleneck = report.ports.iter().find(|p| p.port == "sw->dst").unwrap();
    assert!(bottleneck.max_queue_bytes <= 60_000, "{bottleneck:?}");
}

/// Each QCN stream's mean rate over the last half of the run, in bit/s.
fn late_rates(report: &frersim::report::Report, from_s: f64) -> Vec<f64> {
    report
        .cn_streams
        .iter()
        .map(|s| {
            let rows: Vec<f64> = report
                .rate_series
                .iter()
                .filter(|r| r.stream == s.stream && r.time_s >= from_s)
                .map(|r| r.rate_mean_bps)
                .collect();
            rows.iter().sum::<f64>() / rows.len() as f64
        })
        .collect()
}

#[test]
fn qcn_brings_n_identical_sources_near_the_fair_share_with_the_queue_at_qeq() {
    // The fixed point of the QCN fluid model (Alizadeh et al. 2008): every source at C/N, the
    // queue at Qeq. The sources start together at line rate, so the first notifications cut
    // them unequally; the rates then drift towards C/N slowly (increases by byte counter scale
    // with the rate; see docs/congestion.md), hence 2 s and a 25 % bound per source, with
    // the aggregate and Jain's index held tightly.
    let duration = 2000 * MS;
    for n in [2u32, 4] {
        let mut spec = incast(n, duration);
        with_qcn(&mut spec, n, 0.15);
        let report = run(&spec);
        let fair = TEN_G as f64 / f64::from(n);
        let rates = late_rates(&report, 1.0);
        for (i, rate) in rates.iter().enumerate() {
            assert!(
                (rate / fair - 1.0).abs() < 0.25,
                "N = {n}: s{i} at {rate:.3e} bit/s, fair share {fair:.3e}: {rates:?}"
            );
        }
        let total: f64 = rates.iter().sum();
        let jain = total * total / (f64::from(n) * rates.iter().map(|r| r * r).sum::<f64>());
        assert!(
            (total / TEN_G as f64 - 1.0).abs() < 0.03 && jain > 0.95,
            "N = {n}: total {total:.3e} bit/s, Jain's index {jain:.3}: {rates:?}"
        );
        let queue: Vec<f64> = report
            .port_series
            .iter()
            .filter(|r| r.port == "sw->dst" && r.time_s >= 1.0 && r.time_s < 2.0)
            .map(|r| r.queue_mean_bytes)
            .collect();
        let mean_queue = queue.iter().sum::<f64>() / queue.len() as f64;
        assert!(
            (0.5 * 26_000.0..2.0 * 26_000.0).contains(&mean_queue),
            "N = {n}: hotspot queue {mean_queue:.0} B over the last half, Qeq 26,000 B"
        );
        let cp = &report.qcn_ports[0];
        let received: u64 = report.cn_streams.iter().map(|s| s.received).sum();
        assert_eq!(
            received, cp.notifications,
            "every notification reaches its talker"
        );
        assert!(cp.notifications > 0);
    }
}

#[test]
fn the_congestion_point_samples_by_its_table() {
    // No congestion: one stream at 5 Gbit/s through 10 Gbit/s, Q = 0, Fb > 0: a sample every
    // 150 KB (every 100th 1500-byte frame) and no notification.
    let mut spec = incast(1, 2 * MS);
    with_qcn(&mut spec, 1, 0.0);
    spec["streams"][0]["rate"] = json!(TEN_G / 2);
    let report = run(&spec);
    let cp = &report.qcn_ports[0];
    let frames = cp.arrived_bytes / 1500;
    assert!(frames > 700);
    assert_eq!((cp.samples, cp.notifications), (frames / 100, 0));

    // Saturated congestion: a stream without QCN overloads a 1 Gbit/s bottleneck, so the queue
    // only grows and every sample after the first gives the largest |Fb| (Qeq 100 B): the
    // first sample after 150 KB (frame 100), then every 18.5 KB, i.e. every 13th frame (a
    // frame is sampled when the bytes still to count are at most its size).
    let mut spec = incast(2, 20 * MS);
    with_qcn(&mut spec, 2, 0.0);
    spec["ports"][4]["rate"] = json!(GBIT);
    spec["ports"][4]["qcn"]["qeq"] = json!(100);
    spec["streams"][1]["qcn"] = Value::Null;
    spec["streams"][1]["rate"] = json!(2 * GBIT);
    spec["streams"][0]["rate"] = json!(GBIT);
    spec["streams"][0]["qcn"]["min_rate"] = json!(500_000_000);
    let report = run(&spec);
    let cp = &report.qcn_ports[0];
    let frames = cp.arrived_bytes / 1500;
    assert!(frames > 200, "{cp:?}");
    assert_eq!(cp.samples, 1 + (frames - 100) / 13, "{cp:?}");
    assert_eq!(cp.notifications, cp.samples);
    assert_eq!(cp.notification_bytes, 64 * cp.notifications);
    assert_eq!(report.cn_streams[0].received, cp.notifications);
    assert_eq!(
        report.cn_streams[0].final_rate_bps, 500_000_000,
        "held at min_rate"
    );

    // With the intervals drawn within +-15 %, the mean interval is still the table's.
    spec["ports"][4]["qcn"]["jitter"] = json!(0.15);
    let cp = &run(&spec).qcn_ports[0];
    let expected = 1.0 + (cp.arrived_bytes - 150_000) as f64 / 18_500.0;
    assert!(
        (cp.samples as f64 / expected - 1.0).abs() < 0.1,
        "{cp:?}, expected about {expected:.0}"
    );
}
