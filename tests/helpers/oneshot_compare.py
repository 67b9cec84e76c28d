"""`check.compare` as it was before the reference side was prepared apart: every call measured
the reference and its wider run again, in two float64 passes with a host sync per chunk. Kept as the
oracle the prepared comparison must agree with, field by field (tests/test_check_prepared.py);
the wording and the tail's blocks, which did not change, come from check.compare.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from workbench.catalog.spec import KernelSpec, Shape, Tolerance
from workbench.check import stochastic
from workbench.check.compare import _unravel, _why, boundary_blocks
from workbench.check.exact import Yardstick
from workbench.check.result import CaseResult
from workbench.check.rule import (
    FACTOR,
    FLOOR_L2_ULPS,
    FLOOR_ULPS,
    GROSS_REL_L2,
    REORDER_ULPS,
    WORST_FACTOR,
)
from workbench.runtime import tensors
from workbench.runtime.errors import Problem, WorkbenchError

CHUNK = 1 << 24
"""Elements compared at a time: float64 copies of a 2^31-element output would not fit."""
MAX_BAD_INDICES = 1 << 20


def floor(dtype: torch.dtype, ulps: float = FLOOR_ULPS) -> float:
    """The calibrated rule's floor for outputs of `dtype`, relative to the output's scale."""
    acc = dtype if torch.finfo(dtype).bits > 32 else torch.float32
    return max(ulps * torch.finfo(dtype).eps, REORDER_ULPS * torch.finfo(acc).eps)


def compare(
    spec: KernelSpec,
    case: CaseResult,
    out: list[torch.Tensor],
    ref: list[torch.Tensor],
    dtype: str | None,
    exact: Yardstick | None = None,
) -> None:
    _same_structure(out, ref)
    stated = spec.tolerances.get(dtype or tensors.dtype_name(ref[0].dtype))
    wide: list = exact.outputs if exact and exact.outputs else []
    if len(wide) != len(ref):
        wide = [None] * len(ref)
    why = (exact.why if exact else "") or "not run"
    judged = [_judge(o, r, x, stated, why) for o, r, x in zip(out, ref, wide)]
    worst = max(judged, key=lambda j: j.excess)
    for j in judged:
        case.numel += j.numel
        case.bad += j.bad
        case.unwritten += j.unwritten
        case.read_padding += j.read_padding
        case.nonfinite += j.nonfinite
        case.max_abs_diff = max(case.max_abs_diff or 0.0, j.max_abs)
    case.rule, case.against, case.against_note = worst.rule, worst.against, worst.note
    case.rel_l2, case.max_rel_diff = worst.kernel
    case.ref_rel_l2, case.ref_max_rel = worst.reference or (None, None)
    case.bound_rel_l2, case.bound_max_rel = worst.bound
    case.worst_index = _unravel(worst.worst_at, worst.shape) if worst.numel else None
    tails = [boundary_blocks(torch.cat(j.bad_at), j.shape) for j in judged if j.bad_at]
    if tails:
        common = sorted(set.intersection(*map(set, tails)))
        case.boundary_only, case.boundary_blocks = bool(common), common
        case.boundary_block = common[0] if common else None
    poisoned = case.unwritten or case.read_padding or case.nonfinite
    if case.bad or poisoned or any(j.l2_over for j in judged):
        case.status = "failed"
        if not poisoned and not case.boundary_only:
            case.stochastic = _stochastic(out, ref, judged)
        if case.stochastic and stochastic.same_distribution(case.stochastic):
            case.status = "passed"
        case.reason = _why(case, judged)


@dataclass
class _Judged:
    """One output tensor's errors against its yardstick and what they were allowed."""

    shape: Shape
    rule: str = ""
    against: str = ""
    """The wider run's dtype; "" for the reference at the test dtype."""
    note: str = ""
    """Why a calibrated output has no wider run."""
    kernel: tuple[float, float] = (0.0, 0.0)
    """Relative L2 error, and the worst element's error relative to max(|value|, RMS)."""
    reference: tuple[float, float] | None = None
    """The same two errors of the reference at the test dtype, against the wider run."""
    bound: tuple[float | None, float | None] = (None, None)
    tolerance: Tolerance | None = None
    """The stated tolerance, or the bounds as one: what another random stream is held to."""
    numel: int = 0
    bad: int = 0
    bad_at: list[torch.Tensor] = field(default_factory=list)
    unwritten: int = 0
    read_padding: int = 0
    nonfinite: int = 0
    max_abs: float = 0.0
    worst_at: int = 0
    scale: float = 1.0
    """The yardstick's RMS: what errors of values nearer zero are relative to."""

    @property
    def l2_over(self) -> bool:
        bound = self.bound[0]
        return bound is not None and not self.kernel[0] <= bound

    @property
    def excess(self) -> float:
        """How far past its bounds the tensor is: its worse norm over that norm's bound."""
        if self.bad or self.unwritten or self.read_padding or self.nonfinite:
            return math.inf
        ratios = [k / b if k == k else math.inf for k, b in zip(self.kernel, self.bound) if b]
        return max(ratios, default=0.0)


def _judge(
    o: torch.Tensor, r: torch.Tensor, x: torch.Tensor | None, stated: Tolerance | None, why: str
) -> _Judged:
    integral = not r.is_floating_point()
    if stated or integral or not _wider(x, r):
        x = None
    j = _measure(o, r, x)
    if x is None and not (stated or integral):
        j.note = why
    if x is not None and j.reference and j.reference[0] > GROSS_REL_L2:
        apart, wider, x = j.reference[0], j.against, None
        j = _measure(o, r, None)
        j.note = f"its {wider} run is another function: relative L2 {apart:.2g} apart"
    if integral:
        j.rule, j.bound = "exact", (None, 0.0)
    elif stated:
        j.rule, j.bound, j.tolerance = "stated", (stated.rel_l2, None), stated
    else:
        ref_l2, ref_max = j.reference or (0.0, 0.0)
        j.rule = "calibrated"
        j.bound = (
            max(FACTOR * ref_l2, floor(r.dtype, FLOOR_L2_ULPS)),
            max(WORST_FACTOR * ref_max, floor(r.dtype)),
        )
        j.tolerance = Tolerance(j.bound[1] * j.scale, j.bound[1], j.bound[0])
    _mark_bad(j, o, r, r if x is None else x)
    return j


def _measure(o: torch.Tensor, r: torch.Tensor, x: torch.Tensor | None) -> _Judged:
    """The kernel's errors (and the reference's, given a wider run x) against x, else r."""
    y = r if x is None else x
    j = _Judged(tuple(r.shape), numel=r.numel(), scale=_rms(y))
    if x is not None:
        j.against = tensors.dtype_name(x.dtype)
    num2 = den2 = ref2 = 0.0
    worst = ref_worst = 0.0
    for start, raw, o64, r64, y64 in _chunks(o, r, y):
        odd = ~torch.isfinite(o64) & ~torch.isnan(r64)
        if bool(odd.any()):
            _count_nonfinite(j, raw, odd, torch.isfinite(r64))
        d = _diff(o64, y64)
        rel = _relative(d, y64, j.scale)
        at = int(rel.argmax())
        if float(rel[at]) > worst or start == 0:
            worst, j.worst_at = max(worst, float(rel[at])), start + at
        j.max_abs = max(j.max_abs, float(d.max()))
        finite = torch.isfinite(y64)
        den2 += float(y64.where(finite, 0.0).square().sum())
        num2 += float(torch.where(finite, o64 - y64, 0.0).square().sum())
        if x is not None:
            ref2 += float(torch.where(finite, r64 - y64, 0.0).square().sum())
            ref_worst = max(ref_worst, float(_relative(_diff(r64, y64), y64, j.scale).max()))
    j.kernel = (_rel(num2, den2), worst)
    if x is not None:
        j.reference = (_rel(ref2, den2), ref_worst)
    return j


def _mark_bad(j: _Judged, o: torch.Tensor, r: torch.Tensor, y: torch.Tensor) -> None:
    """Count the elements past the element-wise bound, keeping where they are."""
    for start, _, o64, r64, y64 in _chunks(o, r, y):
        d = _diff(o64, y64)
        if j.rule == "stated" and j.tolerance:
            allowed = j.tolerance.atol + j.tolerance.rtol * r64.abs().where(torch.isfinite(r64), 0)
            bad = d > allowed
        else:
            bad = _relative(d, y64, j.scale) > (j.bound[1] or 0.0)
        j.bad += int(bad.sum())
        if len(j.bad_at) < MAX_BAD_INDICES and bool(bad.any()):
            j.bad_at.append(torch.nonzero(bad).reshape(-1) + start)


def _wider(x: torch.Tensor | None, r: torch.Tensor) -> bool:
    """Whether the wider run's output is a yardstick for `r`: same shape, more precise."""
    return (
        x is not None
        and tuple(x.shape) == tuple(r.shape)
        and x.is_floating_point()
        and torch.finfo(x.dtype).eps < torch.finfo(r.dtype).eps
    )


def _diff(a64: torch.Tensor, y64: torch.Tensor) -> torch.Tensor:
    """|a - y|, 0 where both are the same infinity or both NaN, inf where only one is NaN."""
    d = (a64 - y64).abs()
    same = (torch.isinf(a64) & (a64 == y64)) | (torch.isnan(a64) & torch.isnan(y64))
    d = torch.where(same, 0.0, d)
    return torch.where(torch.isnan(d), math.inf, d)


def _relative(d: torch.Tensor, y64: torch.Tensor, scale: float) -> torch.Tensor:
    """Each error relative to its value, or to the output's RMS where that is larger (errors
    of values near zero are those of the larger terms that cancelled there); 0 where the
    error is, inf where a value of an all-zero output is off."""
    norm = y64.abs().where(torch.isfinite(y64), 1.0).clamp(min=scale)
    return torch.where(d == 0, 0.0, d / norm)


def _rms(y: torch.Tensor) -> float:
    total, n = 0.0, 0
    flat = y.detach().reshape(-1)
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start : start + CHUNK].double()
        finite = torch.isfinite(part)
        total += float(part.where(finite, 0.0).square().sum())
        n += int(finite.sum())
    return math.sqrt(total / n) if n else 0.0


def _rel(num2: float, den2: float) -> float:
    num = math.inf if math.isnan(num2) else math.sqrt(num2)
    den = math.sqrt(den2)
    return num / den if den else (0.0 if num == 0 else math.inf)


def _same_structure(out: list[torch.Tensor], ref: list[torch.Tensor]) -> None:
    if len(out) != len(ref):
        raise WorkbenchError(
            Problem(
                "output-mismatch",
                f"kernel returned {len(out)} tensors, reference {len(ref)}",
                "make kernel_fn and reference_fn return the same outputs",
            )
        )
    for o, r in zip(out, ref):
        if tuple(o.shape) != tuple(r.shape):
            raise WorkbenchError(
                Problem(
                    "shape-mismatch",
                    f"kernel output has shape {tuple(o.shape)}, reference {tuple(r.shape)}",
                    "fix the output allocation or the grid in kernel_fn (or the reference)",
                )
            )


def _chunks(
    o: torch.Tensor, r: torch.Tensor, y: torch.Tensor
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(start, the kernel's elements as stored, then kernel, reference and yardstick in
    float64) per CHUNK of flat elements."""
    flat_o = o.detach().reshape(-1)
    flat_r, flat_y = (t.detach().to(o.device).reshape(-1) for t in (r, y))
    for start in range(0, flat_r.numel(), CHUNK):
        end = start + CHUNK
        raw = flat_o[start:end]
        yield start, raw, raw.double(), flat_r[start:end].double(), flat_y[start:end].double()


def _count_nonfinite(
    j: _Judged, raw: torch.Tensor, odd: torch.Tensor, finite_ref: torch.Tensor
) -> None:
    """Sort NaN/Inf outputs where the reference has no NaN by where they came from."""
    payload = tensors.nan_payload(raw)
    nan = odd & torch.isnan(raw)
    unwritten = nan & (payload == tensors.UNWRITTEN)
    padding = nan & (payload == tensors.PADDING)
    j.unwritten += int(unwritten.sum())
    j.read_padding += int(padding.sum())
    j.nonfinite += int((odd & finite_ref & ~unwritten & ~padding).sum())


def _stochastic(
    out: list[torch.Tensor], ref: list[torch.Tensor], judged: list[_Judged]
) -> dict | None:
    """Another random stream is judged against the reference at the test dtype (a wider run
    draws its own), element by element with each output's own bounds."""
    tol = max((j.tolerance for j in judged if j.tolerance), key=lambda t: t.rel_l2, default=None)
    if tol is None:
        return None
    tally = stochastic.ZeroTally()
    for o, r in zip(out, ref):
        for _, _, o64, r64, _ in _chunks(o, r, r):
            tally.add(o64, r64, tol)
    return tally.judge(tol)
