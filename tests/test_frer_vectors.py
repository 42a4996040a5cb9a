"""The shared 802.1CB vectors replayed through the Python API give the expected verdicts and
counters, and the vectors still match the reference model that generated them."""

import json
import sys
from pathlib import Path

import pytest

from frerlab.frer import SequenceRecovery

VECTORS = Path(__file__).parent / "vectors"
sys.path.insert(0, str(VECTORS))
import generate  # noqa: E402  (the reference model lives beside the vectors)

FILES = sorted(VECTORS.glob("*.json"))


def test_there_are_vectors_for_every_required_situation():
    names = {f.stem for f in FILES}
    for needed in ["two_paths_loss_jitter_reorder", "same_path_duplicates_individual",
                   "wraparound_65535", "rogue_bounds", "untagged_dropped", "reset_timeout"]:
        assert needed in names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_python_api_replays_vector(path):
    vector = json.loads(path.read_text())
    rcvy = SequenceRecovery(**vector["recovery"])
    for i, event in enumerate(vector["events"]):
        if event.get("op") == "reset":
            rcvy.reset()
            continue
        rcvy.receive(event["seq"], event["t_ns"])
        assert rcvy.last_verdict == event["expect"], f"event {i}: {event}"
    assert dict(rcvy.counters) == vector["counters"]


def test_committed_vectors_are_what_the_reference_model_generates():
    generated = {v["name"]: v for v in generate.scenarios()}
    assert set(generated) == {f.stem for f in FILES}
    for f in FILES:
        assert json.loads(f.read_text()) == generated[f.stem], f.stem
