"""The device's measured ceilings: copy bandwidth and matmul rate (child side: imports torch).

Datasheet peaks are never reached (an H100 copies at about 90 % of its 3.35 TB/s), so rooflines
use what this device does: a large device-to-device copy, counting bytes read plus written, and
`torch.matmul` on large square matrices. Measured once per GPU model and torch version and kept
in reports/ceilings.json; `refresh` measures again.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from workbench.bench.result import Ceilings
from workbench.bench.timing import quantiles_ms
from workbench.run import store
from workbench.runtime import gpu_lock

COPY_BYTES = 1 << 30
"""1 GiB each way: 40x the L2 of an H100, so the copy runs at DRAM speed."""
MATMUL_SIZES: dict[str, tuple[int, ...]] = {
    "bfloat16": (8192, 4096),
    "float16": (8192,),
    "float32": (8192,),  # with TF32 allowed: what a float32 tl.dot uses by default
}
Emit = Callable[[dict], None]


def cache_path() -> Path:
    return store.reports_dir() / "ceilings.json"


def cache_key(device: str, torch_version: str) -> str:
    return f"{device} | torch {torch_version}"


def get(refresh: bool = False, emit: Emit | None = None) -> Ceilings:
    """This device's ceilings, from the cache when it has them, else measured (seconds)."""
    import torch

    key = cache_key(torch.cuda.get_device_name(), torch.__version__)
    path = cache_path()
    found = None if refresh else _cached(path, key)
    if found:
        return found
    # Under the GPU's lock, and read again there: runs started together measure once.
    with gpu_lock.alone("cuda"):
        found = None if refresh else _cached(path, key)
        if found:
            return found
        if emit:
            emit({"event": "progress", "case": "measuring the device's copy and matmul ceilings"})
        ceil = measure()
    cached = _read(path)
    cached[key] = ceil.to_dict()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".ceilings.")
        with os.fdopen(fd, "w") as f:
            json.dump(cached, f, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        if emit:
            emit({"event": "note", "text": f"ceilings not cached in {path}: {exc}"})
    return ceil


def stored() -> Ceilings | None:
    """This device's ceilings as a bench measured them, without measuring (None before)."""
    import torch

    return _cached(cache_path(), cache_key(torch.cuda.get_device_name(), torch.__version__))


def _cached(path: Path, key: str) -> Ceilings | None:
    try:
        return Ceilings(**_read(path)[key])
    except (KeyError, TypeError):  # absent, or written by another version of this module
        return None


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def measure() -> Ceilings:
    import torch
    import triton

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return Ceilings(
        device=torch.cuda.get_device_name(),
        torch=torch.__version__,
        triton=triton.__version__,
        copy_gbps=round(copy_gbps(), 1),
        matmul_tflops={
            dtype: {str(n): round(matmul_tflops(n, dtype), 1) for n in sizes}
            for dtype, sizes in MATMUL_SIZES.items()
        },
        l2_bytes=int(getattr(props, "L2_cache_size", 50 << 20)),
        measured=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    )


def copy_gbps(nbytes: int = COPY_BYTES) -> float:
    import torch

    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = quantiles_ms(lambda: dst.copy_(src))[0]
    return 2 * src.nbytes / (ms * 1e-3) / 1e9


def matmul_tflops(n: int, dtype: str) -> float:
    import torch

    a = torch.randn(n, n, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(n, n, device="cuda", dtype=getattr(torch, dtype))
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")  # TF32 for float32; no effect on 16-bit types
    try:
        ms = quantiles_ms(lambda: torch.matmul(a, b))[0]
    finally:
        torch.set_float32_matmul_precision(precision)
    return 2 * n**3 / (ms * 1e-3) / 1e12
