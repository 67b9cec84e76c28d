"""Correctness check of a kernel against its PyTorch reference (runs in the job's child process).

Each case draws fresh random inputs, poisons every fresh allocation with NaN so unwritten output
shows, runs kernel and reference, and compares in float64. The facts it records (errors only at
the tile boundary, only with strided inputs, run-to-run differences) feed the diagnosis.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from workbench.catalog.spec import KernelSpec, Shape
from workbench.run.faults import problem_from_exception
from workbench.runtime import tensors
from workbench.runtime.errors import Problem, WorkbenchError

Emit = Callable[[dict], None]
INTERPRETER_BF16 = (
    "the Triton interpreter computes bfloat16 wrongly or not at all; check bf16 on a GPU"
)


@dataclass
class CaseResult:
    shape_set: str
    shape: list[int]
    dtype: str
    layout: str
    """"contiguous", or "strided" when the tensor inputs are non-contiguous views."""
    status: str = "passed"
    """passed | failed | skipped | error."""
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    rel_l2: float | None = None
    worst_index: list[int] | None = None
    unwritten: int = 0
    """Output elements left NaN (poisoned before the launch) where the reference is finite."""
    bad: int = 0
    numel: int = 0
    boundary_only: bool = False
    boundary_block: int | None = None
    """The smallest power-of-two tile whose partial last tile holds every wrong element."""
    deterministic: bool | None = None
    reason: str = ""
    problem: dict | None = None
    seconds: float = 0.0


@dataclass
class CheckReport:
    kernel: str
    device: str
    mode: str
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        ran = [c for c in self.cases if c.status != "skipped"]
        return bool(ran) and all(c.status == "passed" for c in ran)

    def summary(self) -> dict:
        by = {s: sum(c.status == s for c in self.cases) for s in ("passed", "failed", "skipped")}
        by["errors"] = sum(c.status == "error" for c in self.cases)
        failed = [c for c in self.cases if c.status == "failed"]
        contiguous_ok = {
            (c.shape_set, tuple(c.shape), c.dtype)
            for c in self.cases
            if c.layout == "contiguous" and c.status == "passed"
        }
        by["stride_only_errors"] = bool(failed) and all(
            c.layout == "strided" and (c.shape_set, tuple(c.shape), c.dtype) in contiguous_ok
            for c in failed
        )
        by["boundary_only_errors"] = bool(failed) and all(c.boundary_only for c in failed)
        by["nondeterministic"] = any(c.deterministic is False for c in self.cases)
        return by

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "device": self.device,
            "mode": self.mode,
            "correct": self.correct,
            "summary": self.summary(),
            "cases": [asdict(c) for c in self.cases],
        }


def plan(spec: KernelSpec, dtypes: list[str] | None, shape_sets: list[str] | None) -> list[tuple]:
    """The (shape set, shape, dtype, layout) cases a check runs, in order."""
    names = shape_sets or [s for s in spec.shapes if s != "bench"] or list(spec.shapes)
    kinds = dtypes or list(spec.dtypes) or [None]
    layouts = ["contiguous", "strided"] if spec.noncontig else ["contiguous"]
    return [
        (set_name, shape, dtype, layout)
        for dtype in kinds
        for set_name in names
        for shape in spec.shape_set(set_name)
        for layout in layouts
    ]


def run_check(
    spec: KernelSpec,
    device: str,
    interpreter: bool,
    emit: Emit,
    dtypes: list[str] | None = None,
    shape_sets: list[str] | None = None,
    seed: int = 0,
) -> CheckReport:
    report = CheckReport(spec.name, device, "interpreter" if interpreter else "gpu")
    cases = plan(spec, dtypes, shape_sets)
    for i, (set_name, shape, dtype, layout) in enumerate(cases):
        emit({"event": "progress", "done": i, "total": len(cases), "case": f"{dtype} {shape}"})
        case = CaseResult(set_name, list(shape), dtype or "as given", layout)
        if interpreter and dtype == "bfloat16":
            case.status, case.reason = "skipped", INTERPRETER_BF16
        else:
            torch.manual_seed(seed + i)
            _run_case(spec, case, shape, dtype, layout, device)
        report.cases.append(case)
        emit({"event": "case", "case": asdict(case)})
    emit({"event": "progress", "done": len(cases), "total": len(cases), "case": ""})
    return report


def check_case(
    spec: KernelSpec, shape: Shape, dtype: str | None, device: str, seed: int = 0
) -> CaseResult:
    """One contiguous case, compared as `check` compares: what `bench` verifies before timing."""
    case = CaseResult("bench", list(shape), dtype or "as given", "contiguous")
    torch.manual_seed(seed)
    _run_case(spec, case, shape, dtype, "contiguous", device)
    return case


def _run_case(
    spec: KernelSpec, case: CaseResult, shape: Shape, dtype: str | None, layout: str, device: str
) -> None:
    start = time.perf_counter()
    try:
        tdtype = tensors.torch_dtype(dtype) if dtype else None
        args = tuple(spec.make_inputs(shape, tdtype, device))
        if layout == "strided":
            args = tensors.noncontig_args(args)
        ref = tensors.outputs(spec.reference_fn(*args))
        with tensors.poisoned_allocations():
            out = tensors.outputs(spec.kernel_fn(*args))
        _sync(device)
        _compare(spec, case, out, ref, dtype)
        if layout == "contiguous":
            with tensors.poisoned_allocations():
                again = tensors.outputs(spec.kernel_fn(*args))
            _sync(device)
            case.deterministic = all(tensors.bitwise_equal(a, b) for a, b in zip(out, again))
    except WorkbenchError as exc:
        case.status, case.problem = "error", exc.problem.to_dict()
        case.reason = exc.problem.cause
    except Exception as exc:  # noqa: BLE001 - a failing kernel is a result, not a crash
        problem = problem_from_exception(exc)
        case.status, case.problem, case.reason = "error", problem.to_dict(), problem.cause
        if problem.kind == "cuda-error":
            raise  # the CUDA context is gone; the job ends here with what it has
    case.seconds = round(time.perf_counter() - start, 4)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


CHUNK = 1 << 24
"""Elements compared at a time: float64 copies of a 2^31-element output would not fit."""
MAX_BAD_INDICES = 1 << 20


def _compare(
    spec: KernelSpec,
    case: CaseResult,
    out: list[torch.Tensor],
    ref: list[torch.Tensor],
    dtype: str | None,
) -> None:
    if len(out) != len(ref):
        raise WorkbenchError(
            Problem(
                "output-mismatch",
                f"kernel returned {len(out)} tensors, reference {len(ref)}",
                "make kernel_fn and reference_fn return the same outputs",
            )
        )
    tol = spec.tolerance(dtype or tensors.dtype_name(ref[0].dtype))
    worst = -math.inf
    num2 = den2 = 0.0
    for o, r in zip(out, ref):
        if tuple(o.shape) != tuple(r.shape):
            raise WorkbenchError(
                Problem(
                    "shape-mismatch",
                    f"kernel output has shape {tuple(o.shape)}, reference {tuple(r.shape)}",
                    "fix the output allocation or the grid in kernel_fn (or the reference)",
                )
            )
        flat_o, flat_r = o.detach().reshape(-1), r.detach().to(o.device).reshape(-1)
        bad_at: list[torch.Tensor] = []
        for start in range(0, flat_r.numel(), CHUNK):
            o64 = flat_o[start : start + CHUNK].double()
            r64 = flat_r[start : start + CHUNK].double()
            finite = torch.isfinite(r64)
            case.unwritten += int((torch.isnan(o64) & ~torch.isnan(r64)).sum())
            diff = (o64 - r64).abs()
            same = (torch.isinf(o64) & (o64 == r64)) | (torch.isnan(o64) & torch.isnan(r64))
            diff = torch.where(same, 0.0, diff)
            diff = torch.where(torch.isnan(diff), math.inf, diff)
            allowed = tol.atol + tol.rtol * r64.abs().where(finite, 0.0)
            bad = diff > allowed
            case.bad += int(bad.sum())
            if len(bad_at) < MAX_BAD_INDICES and bool(bad.any()):
                bad_at.append(torch.nonzero(bad).reshape(-1) + start)
            case.max_abs_diff = max(case.max_abs_diff or 0.0, float(diff.max()))
            rel = float((diff / r64.abs().clamp(min=tol.atol)).where(finite, 0).max())
            case.max_rel_diff = max(case.max_rel_diff or 0.0, rel)
            excess = diff - allowed
            at = int(excess.argmax())
            if float(excess[at]) > worst:
                worst = float(excess[at])
                case.worst_index = _unravel(start + at, r.shape)
            den2 += float(r64.where(finite, 0.0).square().sum())
            num2 += float(torch.where(finite, o64 - r64, 0.0).square().sum())
        case.numel += flat_r.numel()
        if bad_at:
            block = boundary_block(torch.cat(bad_at), tuple(r.shape))
            case.boundary_only, case.boundary_block = block is not None, block
    num = math.inf if math.isnan(num2) else math.sqrt(num2)
    den = math.sqrt(den2)
    case.rel_l2 = num / den if den else (0.0 if num == 0 else math.inf)
    if case.bad or case.unwritten or case.rel_l2 > tol.rel_l2:
        case.status = "failed"
        case.reason = _why(case, tol.rel_l2)


def _why(case: CaseResult, l2_bound: float) -> str:
    parts = []
    if case.unwritten:
        parts.append(f"{case.unwritten} of {case.numel} outputs not written (still NaN)")
    if case.bad:
        parts.append(f"{case.bad} of {case.numel} elements outside tolerance")
    if (case.rel_l2 or 0.0) > l2_bound:
        parts.append(f"relative L2 error {case.rel_l2:.3g} > {l2_bound:g}")
    if case.boundary_only:
        parts.append(f"all within the last partial tile of a {case.boundary_block}-wide block")
    return "; ".join(parts)


def _unravel(flat: int, shape: Shape) -> list[int]:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return list(reversed(idx))


def boundary_block(bad_flat: torch.Tensor, shape: Shape) -> int | None:
    """Smallest power-of-two block B (16..size) whose partial last tile holds all wrong elements.

    With a tile of B elements along a dimension of size s (s % B != 0), the partial tile covers
    indices >= s // B * B. Errors confined there are the signature of a missing or wrong mask.
    `bad_flat` holds the flat (row-major) indices of the wrong elements.
    """
    if bad_flat.numel() == 0 or not shape:
        return None
    coords, rest = [], bad_flat
    for size in reversed(shape):
        coords.append(rest % size)
        rest = rest // size
    coords.reverse()
    block = 16
    while block <= max(shape):
        in_tail = torch.zeros_like(bad_flat, dtype=torch.bool)
        for idx, size in zip(coords, shape):
            if size % block and size >= block:
                in_tail |= idx >= size // block * block
        if bool(in_tail.all()):
            return block
        block *= 2
    return None


def job(spec: KernelSpec, params: dict, ctx: Any) -> dict:
    """Worker entry: params may name "dtypes" and "shape_sets"."""
    report = run_check(
        spec,
        ctx.device,
        ctx.interpreter,
        ctx.emit,
        dtypes=params.get("dtypes"),
        shape_sets=params.get("shape_sets"),
        seed=int(params.get("seed", 0)),
    )
    return report.to_dict()
