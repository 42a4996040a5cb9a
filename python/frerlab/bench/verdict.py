"""The TSN latency verdict of a campaign's latency step (seed 002 section 2.4): a percentile of
the one-way latency must stay below a limit. It lives apart from frerlab.bench.campaign, which
loads the testbed, the data plane and the native module, so that reports rendered from stored
results (frerlab.report) read it without any of those.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Verdict(BaseModel):
    """The TSN latency verdict: a percentile must stay below a limit (seed 002 section 2.4).
    Strict like every campaign field: a value of the wrong kind is refused, never coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    percentile: float = Field(99.9, gt=0, lt=100)
    limit_us: float = Field(300.0, gt=0)
