"""Correctness check of a kernel against its PyTorch reference (runs in the job's child process).

Each case draws fresh random inputs (refused first when they would not fit the memory they go
to), poisons every fresh allocation with one NaN and the gaps of strided input copies with
another, so unwritten outputs and out-of-view reads show apart, runs the reference on wider
inputs (`check.exact`) and at the test dtype, then the kernel (its launches recorded,
`check.launches`), and compares them (`check.compare`). Every tensor the kernel is handed sits
between guard regions, and in the interpreter every access is checked as it happens
(`check.guards`): a write or read out of bounds, or a read of memory nothing wrote, fails the
case at its line. A three-name module, whose get_inputs() gives one shape, is also checked at
irregular shapes cut from those inputs (the "derived" set, last); a kernel that raises there
hard-codes its sizes, and the case is skipped with that reason. The facts recorded per case and
for the whole check
(`check.verdict`) feed the diagnosis.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from workbench.catalog import loader
from workbench.catalog.spec import KernelSpec, Shape
from workbench.check import exact, guards, launches
from workbench.check.compare import compare
from workbench.check.result import CaseResult, CheckReport
from workbench.run.faults import problem_from_exception
from workbench.run.params import CheckParams
from workbench.runtime import compat, gpu_lock, tensors
from workbench.runtime.errors import WorkbenchError, fail

Emit = Callable[[dict], None]
INTERPRETER_BF16 = (
    "the Triton interpreter computes bfloat16 wrongly or not at all; check bf16 on a GPU"
)


def plan(
    spec: KernelSpec, dtypes: list[str] | None, shape_sets: list[str] | None, device: str
) -> list[tuple]:
    """The (shape set, shape, dtype, layout) cases a check runs, in order: a three-name
    module's derived shapes last, where sizes it hard-codes can do the least harm."""
    sets = {name: spec.shape_set(name) for name in spec.shapes}
    derived = loader.derived_shapes(spec, device)
    if derived:
        sets[loader.DERIVED] = derived
    names = shape_sets or [s for s in sets if s != "bench"] or list(sets)
    unknown = [n for n in names if n not in sets]
    if unknown:
        raise fail(
            "unknown-shape-set",
            f"--shapes {unknown[0]}: {spec.name} has no shape set {unknown[0]!r}",
            f"use one of: {', '.join(sets)}",
            source="usage",
        )
    kinds = dtypes or list(spec.dtypes) or [None]
    layouts = ["contiguous", "strided"] if spec.noncontig else ["contiguous"]
    cases = [
        (set_name, shape, dtype, layout)
        for dtype in kinds
        for set_name in names
        for shape in sets[set_name]
        for layout in layouts
    ]
    return sorted(cases, key=lambda c: c[0] == loader.DERIVED)


def run_check(
    spec: KernelSpec,
    device: str,
    interpreter: bool,
    emit: Emit,
    dtypes: list[str] | None = None,
    shape_sets: list[str] | None = None,
    seed: int = 0,
    guards: bool = True,
    sanitize: str | None = None,
    least: bool = False,
) -> CheckReport:
    """`guards`: guard regions around every tensor (and the interpreter's bounds); `sanitize`:
    the compute-sanitizer tool this process runs under, which must see the real allocations
    (no guards), the smallest cases only and, for initcheck, outputs as allocated; `least`:
    only the smallest case of each shape set (`smallest`)."""
    report = CheckReport(spec.name, device, "interpreter" if interpreter else "gpu")
    cases = plan(spec, dtypes, shape_sets, device)
    if sanitize or least:
        cases = smallest(cases)
    how = Guarding(guards and not sanitize, interpreter, sanitize != "initcheck", not sanitize)
    tuners = [j for j in spec.jit if isinstance(j, compat.launcher_classes()["autotune"])]
    with compat.first_config_only(tuners if interpreter else []) as pinned:
        report.notes += [
            f"interpreter: {said} alone, untimed (no GPU to tune on)" for said in pinned
        ]
        for i, (set_name, shape, dtype, layout) in enumerate(cases):
            emit({"event": "progress", "done": i, "total": len(cases), "case": f"{dtype} {shape}"})
            case = CaseResult(set_name, list(shape), dtype or "as given", layout)
            if interpreter and dtype == "bfloat16":
                case.status, case.reason = "skipped", INTERPRETER_BF16
            else:
                torch.manual_seed(seed + i)
                _run_case(spec, case, shape, dtype, layout, device, how)
            report.cases.append(case)
            emit({"event": "case", "case": case.to_dict()})
    emit({"event": "progress", "done": len(cases), "total": len(cases), "case": ""})
    return report


@dataclass(frozen=True)
class Guarding:
    """How a case watches the kernel's memory accesses (`check.guards`)."""

    guards: bool = True
    interpreter: bool = False
    poison: bool = True
    repeat: bool = True
    """Run the kernel a second time to see it deterministic."""


def smallest(cases: list[tuple]) -> list[tuple]:
    """Per shape set, the smallest contiguous case of the first dtype: what a sanitizer, 10-100x
    slower, runs (an irregular set keeps its partial tiles)."""
    first = cases[0][2] if cases else None
    kept: dict[str, tuple] = {}
    for case in cases:
        set_name, shape, dtype, layout = case
        if dtype != first or layout != "contiguous":
            continue
        if set_name not in kept or math.prod(shape) < math.prod(kept[set_name][1]):
            kept[set_name] = case
    return list(kept.values())


def check_case(
    spec: KernelSpec, shape: Shape, dtype: str | None, device: str, seed: int = 0
) -> CaseResult:
    """One contiguous case, compared as `check` compares: what `bench` verifies before timing."""
    case = CaseResult("bench", list(shape), dtype or "as given", "contiguous")
    torch.manual_seed(seed)
    _run_case(spec, case, shape, dtype, "contiguous", device, Guarding())
    return case


def _run_case(
    spec: KernelSpec,
    case: CaseResult,
    shape: Shape,
    dtype: str | None,
    layout: str,
    device: str,
    how: Guarding,
) -> None:
    start = time.perf_counter()
    try:
        with gpu_lock.alone(device):  # a check's kernels would skew another run's timing
            _compare_case(spec, case, shape, dtype, layout, device, how)
    except WorkbenchError as exc:
        case.status, case.problem = "error", exc.problem.to_dict()
        case.reason = exc.problem.cause
    except Exception as exc:  # noqa: BLE001 - a failing kernel is a result, not a crash
        problem = problem_from_exception(exc)
        case.status, case.problem, case.reason = "error", problem.to_dict(), problem.cause
        if problem.kind == "cuda-error":
            raise  # the CUDA context is gone; the job ends here with what it has
    if case.status == "error" and case.shape_set == loader.DERIVED:
        case.status, case.problem = "skipped", None
        case.reason = (
            f"not a kernel failure: at sizes cut from get_inputs() it raised ({case.reason}); "
            "it may hard-code the sizes get_inputs() makes"
        )
    case.seconds = round(time.perf_counter() - start, 4)


def _compare_case(
    spec: KernelSpec,
    case: CaseResult,
    shape: Shape,
    dtype: str | None,
    layout: str,
    device: str,
    how: Guarding,
) -> None:
    tdtype = tensors.torch_dtype(dtype) if dtype else None
    # the most of them alive at once: originals, strided copies twice as wide, guarded copies,
    # and the reference's float64 copies (8 bytes an element)
    copies = (1 + how.guards) * (2 if layout == "strided" else 1) + (layout == "strided")
    copies += 8 // tdtype.itemsize if tdtype is not None and tdtype.is_floating_point else 0
    what = tensors.inputs_text(shape, dtype)
    make = lambda dev: tuple(spec.make_inputs(shape, tdtype, dev))  # noqa: E731
    made = tensors.make_inputs(make, what, device, copies)
    case.inputs = [list(a.shape) for a in made if isinstance(a, torch.Tensor)]
    if layout == "strided":
        made = tensors.noncontig_args(made)
    watch = guards.Watch(spec.kernel_fn, made, how.interpreter, how.guards)
    args = watch.args
    wider = exact.run(spec.reference_fn, args)
    ref = tensors.outputs(spec.reference_fn(*args))
    with watch.kernel(how.poison), launches.recorded(case.launches):
        out = tensors.outputs(spec.kernel_fn(*args))
    _sync(device)
    compare(spec, case, out, ref, dtype, wider)
    watch.conclude(case, out)
    if layout == "contiguous" and how.repeat and not case.accesses:  # unguarded, it may crash
        with tensors.poisoned_allocations():
            again = tensors.outputs(spec.kernel_fn(*args))
        _sync(device)
        case.deterministic = all(tensors.bitwise_equal(a, b) for a, b in zip(out, again))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def job(spec: KernelSpec, params: CheckParams, ctx: Any) -> dict:
    """Worker entry."""
    report = run_check(
        spec,
        ctx.device,
        ctx.interpreter,
        ctx.emit,
        dtypes=params.dtypes,
        shape_sets=params.shape_sets,
        seed=params.seed,
        guards=params.guards,
        sanitize=params.sanitize,
        least=params.smallest,
    )
    return report.to_dict()
