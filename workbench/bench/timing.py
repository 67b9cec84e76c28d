"""How a kernel is timed, for the bench, the sweep and cache verify (GPU side: imports torch
and triton in its functions): always with L2 flushed before every call (256 MiB zeroed), reported
as the median with its 20th and 80th percentiles.

Two ways, one per need. `quantiles_ms`: `triton.testing.do_bench`, about 100 ms of calls, what
Triton's own autotuner measures (the bench, the device's ceilings, cache verify's re-timings).
`adaptive_ms`: the sweep's, which times many configs: it stops once the median is known, or once
the config is clearly slower than the best so far. When to stop and when one timing beats another
are `timing_rules` (pure, read by the UI process too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict, cast

from workbench.bench.timing_rules import quantiles, stop

QUANTILES = [0.5, 0.2, 0.8]
"""What `quantiles_ms` asks do_bench for: median, p20, p80."""
FLUSH_BYTES = 256 << 20
"""What do_bench zeroes before every timed call to flush L2."""
WARMUP_CALLS = 3
BATCH = 5


def quantiles_ms(fn: Callable[[], object]) -> tuple[float, float, float]:
    """(median, 20th, 80th percentile) ms of fn by do_bench, L2 flushed before every call."""
    from triton.testing import do_bench

    p50, p20, p80 = cast("list[float]", do_bench(fn, quantiles=QUANTILES))  # one per quantile
    return float(p50), float(p20), float(p80)


class Timing(TypedDict):
    """`adaptive_ms`'s figures, as a sweep row keeps them."""

    ms: float
    p20: float
    p80: float
    samples: int
    calls: int
    stop: str
    """Why it stopped (`timing_rules.stop`), or "light": a timing of a set number of samples."""


def adaptive_ms(
    fn: Callable[[], Any], best_ms: float | None = None, samples: int | None = None
) -> Timing:
    """Median, p20, p80 ms of fn with L2 flushed before each call; samples until the median is
    known to PRECISION, the config is clearly slower than `best_ms`, or BUDGET_MS is spent.
    `samples`: a light timing of exactly that many (successive halving's first rounds)."""
    import torch

    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    for _ in range(WARMUP_CALLS):
        fn()
    torch.cuda.synchronize()
    times: list[float] = []
    spent = 0.0
    why = ""
    while not why:
        batch_size = BATCH if samples is None else min(BATCH, samples - len(times))
        pairs = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(batch_size)
        ]
        for start, end in pairs:
            flush.zero_()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        batch = [s.elapsed_time(e) for s, e in pairs]
        times += batch
        spent += sum(batch)
        if samples is None:
            why = stop(times, spent, best_ms)
        elif len(times) >= samples:
            why = "light"
    p20, p50, p80 = quantiles(times)
    calls = WARMUP_CALLS + len(times)
    return Timing(ms=p50, p20=p20, p80=p80, samples=len(times), calls=calls, stop=why)
