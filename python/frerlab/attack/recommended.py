"""The configuration frerlab recommends against an attacker on one member path, and the harm it
states for each attack of the catalog (docs/security.md, "The recommended configuration").

The configuration: vector recovery (match passes every replayed or babbled frame that differs
from the last one, 802.1CB 7.4.3.5), history length 32, reset timeout 1000 ms, take-no-sequence
off (a frame stripped of its R-TAG is discarded, 10.4.1.6), no individual recovery (it adds
nothing here: the sequence function already discards what an individual one would); the
rogue-rate guard with reset (more than 20 rogue frames in 50 ms, frerlab.dataplane.control.guard);
and each path's copies policed (802.1Qci) at the stream's SDU rate on a path and 10 % more, with
a burst of 50 ms of it (so that a path's frames bunched by scheduling jitter stay green).

What it does not stop, and states: a forged number inside the history window costs the genuine
frame that carries it (nothing without authentication tells them apart), and so does a frame
replayed one wrap of the 16-bit numbers later, whose stale payload reaches the listener; a
lock-out after a reset lasts until the guard's reset (at most three of its periods per forged
frame that takes the window). Everything else costs no genuine frame and delivers nothing.
`stated` gives each attack's bound, `bound` checks a suite row against it.
"""

from __future__ import annotations

import math

from frerlab.attack import run, spec
from frerlab.attack.suite import Guard

ALGORITHM = "vector"
#: The testbed settings (bed.Settings fields) of the recommended configuration.
TESTBED = {"history_length": 32, "reset_timeout_ms": 1000, "take_no_sequence": False, "individual_recovery": False}
GUARD = Guard(threshold=20, period_s=0.05)
DEFENCE = "guard+police"
#: Meter headroom over the stream's own SDU rate on a path, and the seconds of it the burst holds.
POLICE_HEADROOM, POLICE_BURST_S = 1.10, 0.05
#: Octets of a frame (FCS included, as the generator sizes it) that are not SDU: the MACs and the FCS.
NOT_SDU = 12 + 4
#: Frames a guard's reset may come late beyond its three periods (the poll's own lateness).
GUARD_SLACK = 20


def police_rate(stream: run.Stream) -> str:
    """The meter's rate for `stream`: its SDU bit/s on one path, and the headroom."""
    return str(math.ceil(stream.rate_fps * (stream.frame_size - NOT_SDU) * 8 * POLICE_HEADROOM))


def testbed(stream: run.Stream) -> dict:
    """The testbed settings for `stream`: TESTBED and the meter's burst (octets)."""
    return {**TESTBED, "police_burst": str(math.ceil(stream.rate_fps * (stream.frame_size - NOT_SDU) * POLICE_BURST_S))}


def stated(a: spec.Attack, stream: run.Stream) -> dict[str, int]:
    """The most genuine frames lost to attack `a` (the outage's own loss apart), duplicates and
    forged frames delivered that the recommended configuration states for it, on `stream`;
    "per_forged": inject-after-reset's loss bound is per forged frame delivered."""
    frames = a.frames()
    window = TESTBED["history_length"]
    if a.kind == "inject-ahead":
        return {"lost": frames, "duplicates": 0, "forged": frames}
    if a.kind == "inject-after-reset":
        return {"lost_per_forged": math.ceil(round(3 * GUARD.period_s * stream.rate_fps, 9)), "duplicates": 0,
                "forged": frames}
    if a.kind == "replay" and a.age > spec.SEQ_SPACE - window:  # across the wrap: ahead, as recovery sees it
        return {"lost": frames, "duplicates": frames, "forged": 0}
    return {"lost": 0, "duplicates": 0, "forged": 0}


def describe(limits: dict[str, int]) -> str:
    """The stated harm in words."""
    lost = (f"lost <= {limits['lost_per_forged']} per forged frame delivered + {GUARD_SLACK}"
            if "lost_per_forged" in limits else f"lost <= {limits['lost']}")
    return f"{lost}, duplicates <= {limits['duplicates']}, forged <= {limits['forged']}"


def bound(a: spec.Attack, stream: run.Stream, row: dict) -> dict:
    """The stated harm of a suite row's attack, and whether the row holds to it."""
    limits = stated(a, stream)
    most_lost = (limits["lost_per_forged"] * row["forged"] + GUARD_SLACK if "lost_per_forged" in limits
                 else limits["lost"])
    holds = (row["lost_to_attack"] <= most_lost and row["duplicates"] <= limits["duplicates"]
             and row["forged"] <= limits["forged"])
    return {"stated": describe(limits), "holds": holds}
