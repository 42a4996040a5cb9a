"""A check every congestion test makes of a simulator run: conservation of frames."""

from __future__ import annotations

from frerlab.sim.api import SimResult

DROP_COLUMNS = ["drop_queue_full", "drop_buffer_full", "drop_link_down", "drop_link_loss", "drop_gate_too_short"]


def assert_conserved(result: SimResult) -> None:
    """Every frame a talker sent (data and FECN probes) was received or dropped at a port. The
    third term, frames still queued, is 0: a run goes on until its queues have drained. For runs
    without FRER, whose copies would count more than once."""
    assert result.frer.empty, "conservation is counted per frame: no FRER streams"
    sent = int(result.streams["sent"].sum())
    received = int(result.streams["received"].sum())
    fecn = result.cn_streams.query("mechanism == 'fecn'") if not result.cn_streams.empty else result.cn_streams
    probes_sent = int(fecn["probes_sent"].sum()) if len(fecn) else 0
    probes_back = int(fecn["received"].sum()) if len(fecn) else 0
    dropped = int(result.ports[DROP_COLUMNS].sum().sum()) if not result.ports.empty else 0
    assert sent + probes_sent == received + probes_back + dropped, (
        f"sent {sent} + probes {probes_sent} != received {received} + probes back {probes_back} + dropped {dropped}")
