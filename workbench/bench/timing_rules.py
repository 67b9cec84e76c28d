"""When a timing stops and when one timing beats another (pure: numbers in, a verdict out).

The sweep's adaptive timing (`timing.adaptive_ms`) stops on `stop`; cache verify calls a tuning
stale on `beats`; NOISE is the floor under which the sweep, the bench's history and cache verify
tell no two timings apart.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

NOISE = 0.02
"""Timings closer than 2 % are not told apart (clocks and a shared GPU move them that much)."""
MIN_SAMPLES = 10
MAX_SAMPLES = 400
BUDGET_MS = 100.0
"""do_bench's default `rep`: the most GPU time one config gets."""
PRECISION = 0.005
"""Stop once the median's standard error is below 0.5 % of it..."""
LOSER = 0.10
"""...or once the config's 20th percentile is 10 % above the best median so far."""
UNSTEADY = 0.2
"""p80 - p20 wider than this share of the median: the median itself may be off (on the H100,
p80 - p20 is under 2 % of the median for nearly every bench row)."""


def quantiles(times: list[float]) -> tuple[float, float, float]:
    """(p20, median, p80) of the samples, interpolated between them."""
    q = statistics.quantiles(times, n=10, method="inclusive")
    return q[1], statistics.median(times), q[7]


def stop(times: list[float], spent: float, best_ms: float | None) -> str:
    """Why the adaptive timing stops after these samples ("" while it goes on): "samples" (the
    most it takes), "precise", "clearly slower" than `best_ms`, or "budget" (`spent` ms)."""
    n = len(times)
    if n >= MAX_SAMPLES:
        return "samples"
    if n < MIN_SAMPLES:
        return ""
    p20, p50, p80 = quantiles(times)
    sigma = (p80 - p20) / 1.683  # p80 - p20 spans 1.683 sigma of a normal distribution
    if 1.253 * sigma / math.sqrt(n) <= PRECISION * p50:
        return "precise"
    if best_ms is not None and p20 > best_ms * (1.0 + LOSER):
        return "clearly slower"
    return "budget" if spent >= BUDGET_MS else ""


def beats(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether timing `a` is clearly faster than `b`, each [p50, p20, p80]: a's p80 under b's p20
    and a's median at least NOISE lower."""
    return a[2] < b[1] and a[0] < b[0] * (1 - NOISE)


def unsteady(ms: float | None, p20: float | None, p80: float | None) -> str | None:
    """What to say of a timing whose samples spread too widely to trust its median; None for
    a steady one, or one that kept no quantiles."""
    if not ms or p20 is None or p80 is None or p80 - p20 <= UNSTEADY * ms:
        return None
    return (
        f"unsteady timing: p20 {p20:.4g} ms, p80 {p80:.4g} ms ({(p80 - p20) / ms:.0%} of the "
        "median apart): another process on the GPU, or a clock change, moved it; time it again"
    )
