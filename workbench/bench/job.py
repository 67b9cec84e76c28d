"""Benchmark a kernel (runs in the job's child process, on a GPU).

For each shape and dtype: the correctness check `check` runs, at that shape; then the median
time from `triton.testing.do_bench` (which flushes L2 before every call) on random inputs,
rotated among several sets when one set fits in L2; GB/s and TFLOP/s from the spec's byte and
FLOP model; the fraction of the measured roofline; and the speedup over the eager reference and
over `torch.compile` of it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch

from workbench.bench import ceilings
from workbench.bench import report as benchreport
from workbench.catalog.spec import KernelSpec, Shape
from workbench.check import job as check
from workbench.run import machine
from workbench.run.faults import problem_from_exception
from workbench.runtime import tensors
from workbench.runtime.errors import Problem, WorkbenchError, fail

Emit = Callable[[dict], None]
MAX_INPUT_SETS = 16
L2_SPAN = 3
"""Rotate enough input sets to touch three times the L2 between two uses of the same set."""


def job(spec: KernelSpec, params: dict, ctx: Any) -> dict:
    """Worker entry: params may name "shapes", "dtypes", "compile" (bool), "refresh_ceilings"."""
    if ctx.device != "cuda":
        raise fail("needs-gpu", machine.needs_gpu_message("bench"), "run bench on a GPU host")
    return run_bench(
        spec,
        ctx.emit,
        ctx.device,
        shapes=params.get("shapes"),
        dtypes=params.get("dtypes"),
        compile_ref=params.get("compile", True),
        refresh=bool(params.get("refresh_ceilings")),
        seed=int(params.get("seed", 0)),
    )


def run_bench(
    spec: KernelSpec,
    emit: Emit,
    device: str = "cuda",
    shapes: list[list[int]] | None = None,
    dtypes: list[str] | None = None,
    compile_ref: bool = True,
    refresh: bool = False,
    seed: int = 0,
) -> dict:
    ceil = ceilings.get(refresh, emit)
    emit({"event": "ceilings", "ceilings": ceil.to_dict()})
    cases = [(shape, dtype) for dtype in _dtypes(spec, dtypes) for shape in _shapes(spec, shapes)]
    records = []
    for i, (shape, dtype) in enumerate(cases):
        label = f"{dtype or 'as given'} {benchreport.shape_text(shape)}"
        emit({"event": "progress", "done": i, "total": len(cases), "case": label})
        rec = bench_case(spec, shape, dtype, ceil, device, compile_ref, seed + i)
        records.append(rec)
        emit({"event": "record", "record": rec})
        if (rec.get("problem") or {}).get("kind") == "cuda-error":
            raise WorkbenchError(Problem(**rec["problem"]))  # the CUDA context is gone
        torch.cuda.empty_cache()  # give the next case's inputs the whole memory
    emit({"event": "progress", "done": len(cases), "total": len(cases), "case": ""})
    status = [r["status"] for r in records]
    return {
        "kernel": spec.name,
        "device": ceil.device,
        "mode": "gpu",
        "correct": bool(records) and all(s == "ok" for s in status),
        "summary": {
            "cases": len(records),
            "ok": status.count("ok"),
            "failed": status.count("failed"),
            "errors": status.count("error"),
        },
        "ceilings": ceil.to_dict(),
        "records": records,
    }


def _shapes(spec: KernelSpec, shapes: list[list[int]] | None) -> list[Shape]:
    if shapes:
        return [tuple(s) for s in shapes]
    if "bench" not in spec.shapes:
        raise fail(
            "no-bench-shapes",
            f"{spec.name} declares no 'bench' shape set (it has {sorted(spec.shapes)})",
            "add shapes={'bench': [...]} to its KernelSpec, or pass --shape",
        )
    return spec.shape_set("bench")


def _dtypes(spec: KernelSpec, dtypes: list[str] | None) -> list[str | None]:
    return list(dtypes or spec.dtypes) or [None]


def bench_case(
    spec: KernelSpec,
    shape: Shape,
    dtype: str | None,
    ceil: ceilings.Ceilings,
    device: str,
    compile_ref: bool,
    seed: int,
) -> dict:
    """One record of bench.json; a failure is a record with status "failed" or "error"."""
    rec: dict[str, Any] = {f: None for f in benchreport.RECORD_FIELDS}
    rec.update(name=spec.name, shape=list(shape), dtype=dtype or "as given", device=ceil.device)
    rec["status"] = "ok"
    try:
        case = check.check_case(spec, shape, dtype, device, seed)
        rec["check"] = {k: getattr(case, k) for k in ("status", "max_abs_diff", "rel_l2")}
        if case.status != "passed":
            rec["status"] = "failed" if case.status == "failed" else "error"
            rec["reason"] = f"correctness check {case.status}: {case.reason}"
            rec["problem"] = case.problem
            return rec
        torch.manual_seed(seed)
        _measure(spec, shape, dtype, ceil, device, compile_ref, rec)
    except Exception as exc:  # noqa: BLE001 - a failing case is a record; the next one runs
        problem = problem_from_exception(exc)
        rec.update(status="error", reason=problem.cause, problem=problem.to_dict())
    return rec


def _measure(
    spec: KernelSpec,
    shape: Shape,
    dtype: str | None,
    ceil: ceilings.Ceilings,
    device: str,
    compile_ref: bool,
    rec: dict,
) -> None:
    tdtype = tensors.torch_dtype(dtype) if dtype else None
    sets = input_sets(spec, shape, tdtype, device, ceil.l2_bytes)
    zeros = _zero_inputs(sets[0])
    if zeros:
        rec["note"] = (
            f"input(s) {zeros} all zeros: the time may be optimistic; draw random inputs in "
            "make_inputs"
        )
    esize = tdtype.itemsize if tdtype is not None else _element_size(sets[0])
    nbytes = spec.bytes_moved(shape, esize) if spec.bytes_moved else None
    flops = spec.flops(shape) if spec.flops else None

    ms, p20, p80 = time_rotating(spec.kernel_fn, sets)
    torch_ms = time_rotating(spec.reference_fn, sets)[0]
    compiled = (
        compiled_ms(spec.reference_fn, sets, spec.compile_mode)
        if compile_ref
        else "n/a: not asked for"
    )

    gbps, tflops = benchreport.rates(ms, nbytes, flops)
    floor, bound = benchreport.floor_ms(nbytes, flops, ceil.copy_gbps, ceil.matmul_rate(dtype))
    rec.update(
        ms=ms,
        ms_p20=p20,
        ms_p80=p80,
        bytes=nbytes,
        flops=flops,
        gbps=gbps,
        tflops=tflops,
        floor_ms=floor,
        bound=bound,
        roofline_ratio=benchreport.roofline_ratio(ms, floor),
        torch_ms=torch_ms,
        compile_ms=compiled if isinstance(compiled, float) else None,
        compile_mode=spec.compile_mode,
        speedup_vs_torch=benchreport.speedup(torch_ms, ms),
        speedup_vs_compile=(
            benchreport.speedup(compiled, ms) if isinstance(compiled, float) else compiled
        ),
        input_sets=len(sets),
    )


def input_sets(
    spec: KernelSpec, shape: Shape, tdtype: torch.dtype | None, device: str, l2_bytes: int
) -> list[tuple]:
    """Fresh random input sets: one, or enough to span L2_SPAN x L2 when one set fits in L2."""
    first = tuple(spec.make_inputs(shape, tdtype, device))
    size = sum(a.nbytes for a in first if isinstance(a, torch.Tensor))
    count = 1
    if 0 < size < l2_bytes:
        count = min(MAX_INPUT_SETS, math.ceil(L2_SPAN * l2_bytes / size))
    return [first] + [tuple(spec.make_inputs(shape, tdtype, device)) for _ in range(count - 1)]


def time_rotating(fn: Callable[..., Any], sets: list[tuple]) -> tuple[float, float, float]:
    """(median, p20, p80) ms of fn, each call on the next input set."""
    turn = itertools.cycle(sets)
    return ceilings.quantiles_ms(lambda: fn(*next(turn)))


def compiled_ms(fn: Callable[..., Any], sets: list[tuple], mode: str = "default") -> float | str:
    """Median ms of torch.compile(fn, mode) for these static shapes, or "n/a: why" when it
    fails."""
    import torch._dynamo

    torch._dynamo.reset()  # a fresh compile per shape and dtype, never a recompile limit
    try:
        return time_rotating(torch.compile(fn, dynamic=False, mode=mode), sets)[0]
    except Exception as exc:  # noqa: BLE001 - the baseline is optional; say why it is missing
        if "CUDA error" in str(exc):
            raise
        lines = str(exc).strip().splitlines()
        return f"n/a: {type(exc).__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")
    finally:
        torch._dynamo.reset()


def _zero_inputs(args: tuple) -> list[int]:
    return [
        i
        for i, a in enumerate(args)
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel() and not a.any()
    ]


def _element_size(args: tuple) -> int:
    """The element size of the first floating-point tensor input (the three-name contract)."""
    floats = [a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    return floats[0].element_size() if floats else 1
