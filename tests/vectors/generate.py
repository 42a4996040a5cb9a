"""Writes the shared 802.1CB sequence-recovery test vectors (tests/vectors/*.json).

The expected verdicts and counters come from `ReferenceRecovery` below: a deliberately plain,
literal transcription of 802.1CB 7.4.3 (the history is a Python list shifted one bit at a time,
bit 0 = RecovSeqNum), written independently of crates/frer so that the Rust core, the Python
API and the eBPF data plane are checked against something that is not themselves. The
project's decisions on the standard's open points (docs/8021cb-decisions.md) are applied here
in the same words.

Run `python tests/vectors/generate.py` after changing a scenario; the vectors are committed and
changes to them are reviewed like code. The random scenarios use fixed seeds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SPACE = 65536
HERE = Path(__file__).resolve().parent


class ReferenceRecovery:
    """One recovery function, as the standard's pseudo-code reads."""

    def __init__(self, algorithm: str, history_length: int, reset_timeout_ns: int | None,
                 individual_recovery: bool, take_no_sequence: bool):
        self.algorithm = algorithm
        self.hl = history_length
        self.timeout = reset_timeout_ns
        self.individual = individual_recovery
        self.take_no_sequence = take_no_sequence
        self.counters = dict.fromkeys(
            ["passed_packets", "discarded_packets", "out_of_order_packets", "rogue_packets",
             "lost_packets", "tagless_packets", "resets"], 0)
        self._clear()

    def _clear(self) -> None:
        self.recov = SPACE - 1
        self.history = [False] * self.hl  # history[i] is RecovSeqNum - i
        self.valid = 0  # how many of history[0..] hold numbers seen since the reset began
        self.take_any = True
        self.deadline = None

    def reset(self) -> None:
        """SequenceRecoveryReset."""
        self._clear()
        self.counters["resets"] += 1

    def receive(self, seq: int | None, now: int) -> str:
        if self.deadline is not None and now >= self.deadline:
            self.reset()
        if seq is None:
            self.counters["tagless_packets"] += 1
            if self.take_no_sequence:
                self.counters["passed_packets"] += 1
                return "pass"
            return "tagless"
        verdict = self._vector(seq) if self.algorithm == "vector" else self._match(seq)
        if verdict == "pass":
            self.counters["passed_packets"] += 1
        elif verdict == "duplicate":
            self.counters["discarded_packets"] += 1
        else:
            self.counters["rogue_packets"] += 1
        if self.timeout is not None and (verdict == "pass" or self.individual):
            self.deadline = now + self.timeout
        return verdict

    def _vector(self, s: int) -> str:
        if self.take_any:
            self.take_any = False
            self.history = [True] + [False] * (self.hl - 1)
            self.valid = 1
            self.recov = s
            return "pass"
        delta = (s - self.recov + SPACE // 2) % SPACE - SPACE // 2
        if delta >= self.hl or delta <= -self.hl:
            return "rogue"
        if delta <= 0:
            if self.history[-delta]:
                return "duplicate"
            self.history[-delta] = True
            self.counters["out_of_order_packets"] += 1
            return "pass"
        if delta != 1:
            self.counters["out_of_order_packets"] += 1
        for _ in range(delta):
            pushed_out = self.history.pop()
            if not pushed_out and self.valid == self.hl:
                self.counters["lost_packets"] += 1
            self.history.insert(0, False)
            self.valid = min(self.valid + 1, self.hl)
        self.history[0] = True
        self.recov = s
        return "pass"

    def _match(self, s: int) -> str:
        if self.take_any:
            self.take_any = False
            self.recov = s
            return "pass"
        delta = (s - self.recov) % SPACE
        if delta == 0:
            return "duplicate"
        if delta != 1:
            self.counters["out_of_order_packets"] += 1
        self.recov = s
        return "pass"


def paths_arrivals(seqs, n_paths, rng, loss=0.0, base_delay=None, jitter_ns=0, period_ns=10_000,
                   same_path_dup=0.0):
    """Arrivals (t_ns, port, seq) of `seqs` sent every `period_ns` over `n_paths` paths, each
    with its own fixed delay, uniform jitter (which reorders within a path), independent loss
    and optional same-path duplication, merged in arrival order."""
    base_delay = base_delay or [1_000 * (p + 1) for p in range(n_paths)]
    arrivals = []
    for i, seq in enumerate(seqs):
        for port in range(n_paths):
            if rng.random() < loss:
                continue
            copies = 2 if rng.random() < same_path_dup else 1
            for _ in range(copies):
                t = i * period_ns + base_delay[port] + rng.randint(0, jitter_ns)
                arrivals.append((t, port, seq))
    arrivals.sort(key=lambda a: (a[0], a[1]))
    return arrivals


def build(name, description, recovery, arrivals):
    """Runs the reference over the arrivals (and `op: reset` markers) and returns the vector."""
    params = {"algorithm": "vector", "history_length": 2, "reset_timeout_ns": None,
              "individual_recovery": False, "take_no_sequence": False, **recovery}
    ref = ReferenceRecovery(**params)
    events = []
    for item in arrivals:
        if item[1] == "reset":
            ref.reset()
            events.append({"t_ns": item[0], "op": "reset"})
            continue
        t, port, seq = item
        events.append({"t_ns": t, "port": port, "seq": seq, "expect": ref.receive(seq, t)})
    return {"name": name, "description": description, "recovery": params, "events": events,
            "counters": ref.counters}


def scenarios():
    rng = random.Random(8021)
    yield build("two_paths_clean", "Two healthy paths, path 1 later: every number passes once "
                "and every second copy is a duplicate.", {"history_length": 32},
                paths_arrivals(range(200), 2, rng))
    yield build("two_paths_loss_jitter_reorder", "Two paths with 10 % independent loss and "
                "jitter larger than the frame period, so each path reorders.",
                {"history_length": 32},
                paths_arrivals(range(2000), 2, rng, loss=0.10, jitter_ns=35_000))
    yield build("three_paths_heavy_loss", "Three paths with 30 % loss each: some numbers are "
                "lost on all three and counted lost once they leave the window.",
                {"history_length": 64},
                paths_arrivals(range(3000), 3, rng, loss=0.30, jitter_ns=15_000))
    yield build("same_path_duplicates_individual", "One member stream whose path duplicates "
                "frames (individual recovery kills the extra copies).",
                {"history_length": 8, "individual_recovery": True, "reset_timeout_ns": 5_000_000},
                paths_arrivals(range(500), 1, rng, same_path_dup=0.2, jitter_ns=2_000))
    yield build("wraparound_65535", "Two paths across the 65535 -> 0 wrap, with loss and jitter: "
                "no spurious out-of-order, rogue or lost at the wrap.", {"history_length": 16},
                paths_arrivals([(65_400 + i) % SPACE for i in range(300)], 2, rng, loss=0.05,
                               jitter_ns=12_000))
    yield build("match_two_paths_wrap", "Match algorithm over two in-order paths across the wrap.",
                {"algorithm": "match"},
                paths_arrivals([(65_500 + i) % SPACE for i in range(100)], 2, rng))
    yield build("match_reordered", "Match algorithm with reordering: late copies of older "
                "numbers pass again (match keeps only the last number).", {"algorithm": "match"},
                paths_arrivals(range(300), 2, rng, jitter_ns=25_000))
    rogue = [(0, 0, 100), (10, 0, 101), (20, 0, 116), (30, 0, 117), (40, 0, 133), (50, 0, 132),
             (60, 0, 117), (70, 0, 116), (80, 0, 118), (90, 0, 40_000), (100, 0, 133),
             (110, 1, 133)]
    yield build("rogue_bounds", "History length 16: jumps of +15 pass, +16 is rogue; -15 is "
                "judged by the history (a duplicate here), -16 is rogue; a far jump is rogue.",
                {"history_length": 16}, rogue)
    untagged = [(0, 0, 0), (10, 0, None), (20, 1, 0), (30, 1, None), (40, 0, 1), (50, 1, 1)]
    yield build("untagged_dropped", "Frames without an R-TAG are counted tagless and dropped.",
                {"history_length": 4}, untagged)
    yield build("untagged_take_no_sequence", "Frames without an R-TAG pass under "
                "take-no-sequence and are counted both tagless and passed.",
                {"history_length": 4, "take_no_sequence": True}, untagged)
    timeout = [(0, 0, 10), (1_000, 1, 10), (999_999, 0, 11), (1_999_998, 1, 11),
               (1_999_999, 1, 11), (2_500_000, 0, 12), (3_499_999, 1, 12), (3_500_000, 0, 5_000),
               (3_600_000, 1, 5_000), (9_000_000, 0, 4_990), (9_000_001, 1, 4_990),
               (9_000_002, 0, 4_989)]
    yield build("reset_timeout", "Reset timeout 1 ms counted from the last passed packet: a "
                "duplicate does not reload it; the reset happens at exactly the deadline, not "
                "1 ns before; after it any number is taken.",
                {"history_length": 32, "reset_timeout_ns": 1_000_000}, timeout)
    yield build("reset_timeout_individual", "The same arrivals under individual recovery, "
                "where discarded packets also reload the timer, so fewer resets happen and the "
                "far jump is rogue instead of taken.",
                {"history_length": 32, "reset_timeout_ns": 1_000_000, "individual_recovery": True},
                timeout)
    babble = [(i * 400_000, 0, 7) for i in range(10)] + [(4_000_000 + i * 400_000, 0, 30_000)
                                                         for i in range(10)]
    yield build("babbling_individual", "A babbling talker repeats one number; individual recovery "
                "keeps discarding it because each discard reloads the timer.",
                {"history_length": 4, "reset_timeout_ns": 1_000_000, "individual_recovery": True},
                babble)
    mgmt = ([(i * 10, 0, 200 + i) for i in range(40) if i != 5]
            + [(400, "reset")] + [(410 + i * 10, 0, 7_000 + i) for i in range(40) if i != 9])
    yield build("management_reset_and_lost", "A management reset mid-stream: numbers before the "
                "first packet after the reset are not counted lost; real gaps are.",
                {"history_length": 8}, mgmt)
    yield build("history_1024_deep_reorder", "History 1024 (the seeds' listener) with one path "
                "about 900 frames behind the other.",
                {"history_length": 1024},
                paths_arrivals(range(3000), 2, rng, base_delay=[0, 900 * 1_000], period_ns=1_000,
                               loss=0.02))
    yield build("history_2_default", "The YANG default history length 2 with reordering of two "
                "and more: late numbers beyond the window are rogue, and with no reset timeout the "
                "function stays stuck once every copy of a number was rogue (why a timeout matters).",
                {},
                paths_arrivals(range(400), 2, rng, jitter_ns=25_000))


def write_vector(vector) -> None:
    """One event a line, so diffs of a regenerated vector stay readable."""
    head = {k: v for k, v in vector.items() if k != "events"}
    lines = ",\n".join("    " + json.dumps(e, separators=(", ", ": ")) for e in vector["events"])
    body = json.dumps(head, indent=2)[:-2]
    text = f'{body},\n  "events": [\n{lines}\n  ]\n}}\n'
    json.loads(text)
    path = HERE / f"{vector['name']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text)
    tmp.replace(path)


if __name__ == "__main__":
    for v in scenarios():
        write_vector(v)
        print(f"{v['name']}: {len(v['events'])} events, counters {v['counters']}")
