"""Triton's own autotuner beside the sweep: the config it picks on a shape, and the entries it
persisted on disk (GPU side; imports torch and triton).
"""

from __future__ import annotations

import glob
import json
import os
import time
from collections.abc import Callable
from typing import Any

from workbench.ir.config import OPTION_NAMES
from workbench.runtime import compat
from workbench.sweep.space import config_values, flat, key


def config_key(config: Any) -> str:
    """A triton.Config as the sweep labels its configs."""
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
