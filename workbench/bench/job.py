"""Benchmark a kernel (runs in the job's child process, on a GPU).

For each shape and dtype: the correctness check `check` runs, at that shape; then the median
time from `triton.testing.do_bench` (which flushes L2 before every call) on random inputs,
rotated among several sets when one set fits in L2; GB/s and TFLOP/s from the spec's byte and
FLOP model, or else from the reference's counted FLOPs and its inputs and outputs (`work`); the
fraction of the measured roofline; the time of a device-to-device copy of the same bytes, timed
the same way (what a kernel of this size can reach at best); and the speedup over the eager
reference and over `torch.compile` of it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from workbench.bench import ceilings, clocks, metrics, work
from workbench.bench.launches import launch_facts
from workbench.bench.metrics import Timings
from workbench.bench.result import (
    AS_GIVEN,
    BenchRecord,
    BenchResult,
    Ceilings,
    Sample,
    case_record,
)
from workbench.bench.timing import quantiles_ms
from workbench.catalog.spec import KernelSpec, Shape
from workbench.check import job as check
from workbench.run import machine
from workbench.run.faults import problem_from_exception
from workbench.run.params import BenchParams
from workbench.runtime import gpu_lock, tensors
from workbench.runtime.errors import Problem, WorkbenchError, fail
from workbench.runtime.grammar import shape_text

Emit = Callable[[dict], None]
Measure = Callable[[Shape, str | None, int], Sample]
"""(shape, dtype, seed) -> what the GPU gave for that case."""
MAX_INPUT_SETS = 16
L2_SPAN = 3
"""Rotate enough input sets to touch three times the L2 between two uses of the same set."""


def job(spec: KernelSpec, params: BenchParams, ctx: Any) -> dict:
    """Worker entry."""
    if ctx.device != "cuda":
        raise fail(
            "needs-gpu",
            machine.needs_gpu_message("bench"),
            "run bench on a GPU host",
            source="usage",
        )
    ceil = ceilings.get(params.refresh_ceilings, ctx.emit)
    timer = CaseTimer(spec, ceil.l2_bytes, ctx.device, params.compile, params.launches)
    result = run_bench(
        spec,
        ctx.emit,
        ceil,
        timer.measure,
        shapes=params.shapes,
        dtypes=params.dtypes,
        seed=params.seed,
    )
    return result.to_dict()


def run_bench(
    spec: KernelSpec,
    emit: Emit,
    ceil: Ceilings,
    measure: Measure,
    shapes: list[list[int]] | None = None,
    dtypes: list[str] | None = None,
    seed: int = 0,
) -> BenchResult:
    """Every case of the kernel through `measure`, each a record; a failing case is a record with
    status "failed" or "error" and the next one runs, except after a CUDA fault."""
    emit({"event": "ceilings", "ceilings": ceil.to_dict()})
    cases = [(shape, dtype) for dtype in _dtypes(spec, dtypes) for shape in _shapes(spec, shapes)]
    result = BenchResult(spec.name, ceil.device, ceil)
    for i, (shape, dtype) in enumerate(cases):
        label = f"{dtype or 'as given'} {shape_text(shape)}"
        emit({"event": "progress", "done": i, "total": len(cases), "case": label})
        try:
            sample = measure(shape, dtype, seed + i)
            rec = case_record(spec.name, shape, dtype, ceil, sample, spec.compile_mode)
        except Exception as exc:  # noqa: BLE001 - a failing case is a record; the next one runs
            problem = problem_from_exception(exc)
            rec = BenchRecord(spec.name, list(shape), dtype or AS_GIVEN, ceil.device)
            rec.status, rec.reason, rec.problem = "error", problem.cause, problem.to_dict()
        result.records.append(rec)
        emit({"event": "record", "record": rec.to_dict()})
        if rec.problem and rec.problem.get("kind") == "cuda-error":
            raise WorkbenchError(Problem(**rec.problem))  # the CUDA context is gone
    emit({"event": "progress", "done": len(cases), "total": len(cases), "case": ""})
    return result


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


@dataclass(frozen=True)
class CaseTimer:
    """How the job measures each case: the kernel, where, and what beside it."""

    spec: KernelSpec
    l2_bytes: int
    device: str
    compile_ref: bool
    """Also time torch.compile of the reference."""
    launches: bool = False
    """Also time one call eagerly and replayed from one CUDA graph."""
    copies: dict[int, float] = field(default_factory=dict, compare=False)
    """Bytes each way -> median ms of a copy of them: timed once per size in a run, as many
    cases share one."""

    def measure(self, shape: Shape, dtype: str | None, seed: int) -> Sample:
        """The check at this shape and, when it passes, the timings (on the GPU)."""
        try:
            case = check.check_case(self.spec, shape, dtype, self.device, seed)
            checked = {k: getattr(case, k) for k in ("status", "max_abs_diff", "rel_l2")}
            if case.status != "passed":
                return Sample(checked, reason=case.reason, problem=case.problem)
            torch.manual_seed(seed)
            return self._time(shape, dtype, checked)
        finally:
            torch.cuda.empty_cache()  # give the next case's inputs the whole memory

    def _time(self, shape: Shape, dtype: str | None, checked: dict) -> Sample:
        spec, device = self.spec, self.device
        tdtype = tensors.torch_dtype(dtype) if dtype else None
        sets = input_sets(spec, shape, tdtype, device, self.l2_bytes)
        zeros = _zero_inputs(sets[0])
        note = (
            f"input(s) {zeros} all zeros: the time may be optimistic; draw random inputs in "
            "make_inputs"
            if zeros
            else None
        )
        floats = _floating(sets[0])
        esize = tdtype.itemsize if tdtype is not None else floats.itemsize if floats else 1
        cost = work.of_case(spec, shape, esize, sets[0])  # outside the lock: nothing is timed
        with gpu_lock.alone(device):
            (ms, p20, p80), kernel_clocks = clocks.during(
                lambda: time_rotating(spec.kernel_fn, sets)
            )
            (torch_ms, _, _), torch_clocks = clocks.during(
                lambda: time_rotating(spec.reference_fn, sets)
            )
            timings = Timings(
                ms=ms,
                ms_p20=p20,
                ms_p80=p80,
                torch_ms=torch_ms,
                compiled=(
                    compiled_ms(spec.reference_fn, sets, spec.compile_mode)
                    if self.compile_ref
                    else "n/a: not asked for"
                ),
                bytes=cost.bytes,
                flops=cost.flops,
                input_sets=len(sets),
                bytes_source=cost.bytes_source,
                flops_source=cost.flops_source,
                input_dtype=str(floats).removeprefix("torch.") if floats and not tdtype else None,
                size_copy_ms=self.size_copy_ms(cost.bytes),
            )
            launch = launch_facts(spec, sets[0], dtype) if self.launches else None
        return Sample(
            checked,
            timings,
            note=note,
            launch=launch,
            clocks=kernel_clocks,
            torch_clocks=torch_clocks,
        )

    def size_copy_ms(self, nbytes: float | None) -> float | None:
        """Median ms of a device-to-device copy moving `nbytes` (half read, half written), timed
        as the kernel is; None without a byte count, or when the copy's buffers do not fit beside
        the case's inputs (the kernel's own timings are kept)."""
        each = metrics.copy_each_way(nbytes)
        if each is None:
            return None
        if each not in self.copies:
            try:
                self.copies[each] = copy_ms(each, self.device, self.l2_bytes)
            except torch.cuda.OutOfMemoryError:
                return None
        return self.copies[each]


def input_sets(
    spec: KernelSpec, shape: Shape, tdtype: torch.dtype | None, device: str, l2_bytes: int
) -> list[tuple]:
    """Fresh random input sets: one, or enough to span L2_SPAN x L2 when one set fits in L2."""
    first = tuple(spec.make_inputs(shape, tdtype, device))
    size = sum(a.nbytes for a in first if isinstance(a, torch.Tensor))
    count = set_count(size, l2_bytes)
    return [first] + [tuple(spec.make_inputs(shape, tdtype, device)) for _ in range(count - 1)]


def set_count(size: int, l2_bytes: int) -> int:
    """How many sets of `size` bytes to rotate: one, or enough to span L2_SPAN x L2 when one
    fits in L2."""
    if 0 < size < l2_bytes:
        return min(MAX_INPUT_SETS, math.ceil(L2_SPAN * l2_bytes / size))
    return 1


def copy_ms(each: int, device: str, l2_bytes: int) -> float:
    """Median ms of `dst.copy_(src)` on `each` random bytes, rotated among source and
    destination pairs as the kernel's input sets are."""
    pairs = [
        (
            torch.empty(each, dtype=torch.uint8, device=device),
            torch.randint(0, 256, (each,), dtype=torch.uint8, device=device),
        )
        for _ in range(set_count(each, l2_bytes))
    ]
    return time_rotating(torch.Tensor.copy_, pairs)[0]


def time_rotating(fn: Callable[..., Any], sets: list[tuple]) -> tuple[float, float, float]:
    """(median, p20, p80) ms of fn, each call on the next input set."""
    turn = itertools.cycle(sets)
    return quantiles_ms(lambda: fn(*next(turn)))


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


def _floating(args: tuple) -> torch.dtype | None:
    """The dtype of the first floating-point tensor input (what a three-name module times)."""
    return next(
        (a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()), None
    )
