"""Job kind "profile-target": the child process that ncu or nsys wraps (imports torch).

Every config is first warmed up outside any range (Triton compiles and autotunes there, so a
range-filtered ncu never replays every autotune config); then, between cudaProfilerStart and
cudaProfilerStop (nsys records only that window), each config's kernel runs `repeats` times
inside a push/pop range of the NVTX domain `workbench`. With no profiler attached the NVTX calls
cost nothing, so the same job also runs plain (and on CPU in interpreter mode).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from workbench.catalog.spec import KernelSpec
from workbench.ir.config import label, split_options
from workbench.profilers.names import DOMAIN, Config, range_name
from workbench.profilers.result import TargetResult
from workbench.run.params import ProfileParams
from workbench.runtime import gpu_lock
from workbench.runtime.errors import fail


def job(spec: KernelSpec, params: ProfileParams, ctx: Any) -> dict:
    """Worker entry: `pin` is one config's values that every launch of the spec's kernel uses."""
    try:
        import nvtx
    except ImportError as exc:  # the ranges are how ncu and nsys find the kernel: no silent skip
        raise fail(
            "missing-package",
            f"the NVTX ranges need the nvtx package, which does not import: {exc}",
            "pip install nvtx in the environment the workbench runs in",
            source="environment",
        ) from exc
    with _pinned(spec, params.pin) as pinned:
        return _profile(spec, params, ctx, nvtx, pinned).to_dict()


@contextlib.contextmanager
def _pinned(spec: KernelSpec, values: dict) -> Iterator[dict | None]:
    """Every launch of the spec's kernel (its autotuned one, else its first) uses `values`."""
    if not values:
        yield None
        return
    from workbench.runtime import compat

    classes = compat.launcher_classes()
    tuned = [j for j in spec.jit if isinstance(j, classes["autotune"])]
    if not (tuned or spec.jit):
        raise fail("no-jit", f"{spec.name} declares no kernel to pin", "add jit=(kernel,)")
    target = (tuned or list(spec.jit))[0]
    with compat.pinned(target, *split_options(values)):
        yield {"kernel": _jit_name(target), "config": label(values)}


def _profile(
    spec: KernelSpec, params: ProfileParams, ctx: Any, nvtx: Any, pin: dict | None
) -> TargetResult:
    import torch

    from workbench.runtime import tensors

    configs = [Config(tuple(c["shape"]), c.get("dtype")) for c in params.configs]
    if not configs:
        raise fail("no-config", "no shape/dtype to profile was given", "pass --config SHAPE")
    warmup = max(params.warmup, 1)
    repeats = max(params.repeats, 1)
    cuda = ctx.device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    ranges = []
    # Alone on the GPU (see gpu_lock) from this process's first kernel on: a warm-up's first call
    # autotunes, timing each config, and any kernel here would skew another run's timing. Under
    # ncu it also orders the locks: the GPU's is taken before ncu's (which a profiled launch
    # waits for), so no process holds ncu's lock while it waits for the GPU's.
    with gpu_lock.alone(ctx.device, lambda path: _waiting(ctx, path)):
        prepared = []
        for i, config in enumerate(configs):  # every warm-up first: the capture holds ranges
            name = range_name(spec.name, config)
            dtype = tensors.torch_dtype(config.dtype) if config.dtype else None
            args = tuple(spec.make_inputs(config.shape, dtype, ctx.device))
            ctx.emit({"event": "phase", "phase": "warmup", "range": name, "index": i})
            start = time.perf_counter()
            for _ in range(warmup):
                spec.kernel_fn(*args)
            sync()
            prepared.append((name, config, args, time.perf_counter() - start))
        if cuda:
            torch.cuda.profiler.start()  # nsys -c cudaProfilerApi records from here
        for name, config, args, warm_s in prepared:
            ctx.emit({"event": "phase", "phase": "range", "range": name, "repeats": repeats})
            start = time.perf_counter()
            with nvtx.annotate(name, domain=DOMAIN):
                for _ in range(repeats):
                    spec.kernel_fn(*args)
                sync()  # inside the range, so its CPU span covers the GPU work (nsys)
            ranges.append(
                {
                    "range": name,
                    **config.to_dict(),
                    "warmup_s": round(warm_s, 4),
                    "range_s": round(time.perf_counter() - start, 4),
                }
            )
        if cuda:
            torch.cuda.profiler.stop()
    prepared.clear()
    ctx.emit({"event": "phase", "phase": "done", "ranges": len(ranges)})
    return TargetResult(
        kernel=spec.name,
        device=torch.cuda.get_device_name() if cuda else ctx.device,
        mode="interpreter" if ctx.interpreter else "gpu",
        warmup=warmup,
        repeats=repeats,
        ranges=ranges,
        jit_kernels=[_jit_name(j) for j in spec.jit],
        pin=pin,
    )


def _waiting(ctx: Any, path: str) -> None:
    ctx.emit({"event": "phase", "phase": "waiting", "why": f"another run holds the GPU ({path})"})


def _jit_name(obj: Any) -> str:
    """Autotuner/Heuristics wrap a JITFunction, which wraps the Python function: its name."""
    for _ in range(8):
        if hasattr(obj, "__code__"):
            break
        obj = getattr(obj, "fn", obj)
    return getattr(obj, "__name__", repr(obj))
