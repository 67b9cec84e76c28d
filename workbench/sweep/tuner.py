"""Time one config of a kernel through its own launcher (pinned by `compat.pinned`, so
`kernel_fn` runs as the user wrote it, grid lambdas and all), and ask Triton's autotuner for its
pick (GPU side; imports torch and triton)."""

from __future__ import annotations

import glob
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from workbench.ir.config import OPTION_NAMES
from workbench.runtime import compat
from workbench.sweep.space import config_values, flat, key

FLUSH_BYTES = 256 << 20
"""What do_bench zeroes before every timed call to flush L2."""
WARMUP_CALLS = 3
BATCH = 5
MIN_SAMPLES = 10
MAX_SAMPLES = 400
BUDGET_MS = 100.0
"""do_bench's default `rep`: the most GPU time one config gets."""
PRECISION = 0.005
"""Stop once the median's standard error is below 0.5 % of it..."""
LOSER = 0.10
"""...or once the config's 20th percentile is 10 % above the best median so far."""


def adaptive_ms(
    fn: Callable[[], Any], best_ms: float | None = None, samples: int | None = None
) -> dict:
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
    stop = ""
    while not stop:
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
            stop = _stop(times, spent, best_ms)
        elif len(times) >= samples:
            stop = "light"
    p20, p50, p80 = _quantiles(times)
    calls = WARMUP_CALLS + len(times)
    return {"ms": p50, "p20": p20, "p80": p80, "samples": len(times), "calls": calls, "stop": stop}


def _quantiles(times: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(times, n=10, method="inclusive")
    return q[1], statistics.median(times), q[7]


def _stop(times: list[float], spent: float, best_ms: float | None) -> str:
    n = len(times)
    if n >= MAX_SAMPLES:
        return "samples"
    if n < MIN_SAMPLES:
        return ""
    p20, p50, p80 = _quantiles(times)
    sigma = (p80 - p20) / 1.683  # p80 - p20 spans 1.683 sigma of a normal distribution
    if 1.253 * sigma / math.sqrt(n) <= PRECISION * p50:
        return "precise"
    if best_ms is not None and p20 > best_ms * (1.0 + LOSER):
        return "clearly slower"
    return "budget" if spent >= BUDGET_MS else ""


def config_key(config: Any) -> str:
    return key(config_values(config.kwargs, **{k: getattr(config, k, None) for k in OPTION_NAMES}))


def triton_pick(tuner: Any, call: Callable[[], Any]) -> dict:
    """What `tuner` (the kernel's Autotuner, its in-memory cache emptied) picks on `call`, how
    long its first call took (benchmarking; the configs are compiled by then) and its timings."""
    import torch

    tuner.cache.clear()
    start = time.perf_counter()
    call()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    timings = getattr(tuner, "configs_timings", None) or {}
    return {
        "label": config_key(tuner.best_config),
        "seconds": round(seconds, 3),
        "timings": {config_key(c): _first(t) for c, t in timings.items()},
    }


def _first(t: Any) -> float:
    return float(t[0] if isinstance(t, (list, tuple)) else t)


def persisted(tuner: Any) -> list[dict]:
    """Triton's on-disk autotune entries for this kernel (TRITON_CACHE_AUTOTUNING), each with its
    key and the config with the lowest median, which Triton would pick on a hit."""
    from triton import knobs

    name = compat.base_function(tuner).__name__[:150]
    found = []
    for path in glob.glob(os.path.join(knobs.cache.dir, "*", f"{name}.autotune.json")):
        try:
            data = json.loads(open(path).read())
            timings = [(c, _first(t)) for c, t in data["configs_timings"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if timings:
            config, ms = min(timings, key=lambda ct: ct[1])
            label = key(flat(config))
            found.append({"file": path, "key": data.get("key"), "label": label, "ms": ms})
    return found
