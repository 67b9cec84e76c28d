"""Compare a kernel's outputs with its reference's, in float64 (pure torch, any device).

Each floating-point output is judged by one rule (`check.rule`). Calibrated, the default: the
kernel's output and the reference's output at the test dtype are both measured against the
reference run on wider inputs (`check.exact`), and the kernel passes when its error is within
FACTOR times the reference's own error, or within a floor of a few ulps of the output dtype, in
two norms: the relative L2 error of the whole output, and the worst element's error relative to
max(|value|, RMS of the output). Without a wider run the reference at the test dtype is the
yardstick and the floor the bound. Stated: a spec's own `tolerances` for the dtype (element-wise
atol and rtol and a relative L2 bound, against the reference at the test dtype) replace it.
Integer and bool outputs must be equal.

NaN and Inf where the reference has none are told apart by their bits: the NaN that poisoned a
fresh allocation (an output left unwritten), the NaN in the gaps of a strided input copy (an
input read outside its view), or neither (the kernel made them). Errors confined to the last
partial tile of a power-of-two block are named, the signature of a missing mask. A failure
made only of elements zeroed on one side and kept on the other is weighed as another random
stream (`check.stochastic`): it passes when keep rate and scale match the reference's.

Everything on the reference's side (the yardstick, its RMS, the reference's own error, the
bounds) is prepared once, a `Reference`; each output is then judged in one pass, its per-chunk
sums read from the device at once: a sweep judges every config of a shape against one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from workbench.catalog.spec import KernelSpec, Shape, Tolerance
from workbench.check import stochastic, verdict
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
    """Judge the kernel's outputs `out` against the reference's `ref` (and its wider run)."""
    _same_structure(out, ref)
    Reference(spec, ref, dtype, exact).judge(case, out)


class Reference:
    """The reference side of a comparison, prepared once: which yardstick each output is
    measured against, its RMS and norm, the reference's own error against it, and the bounds
    they give. Every output judged against it then costs one pass over that output. It holds
    the tensors it was given, no copies: float64 copies of a sweep's outputs would take 8 bytes
    an element on the GPU for every shape kept."""

    def __init__(
        self,
        spec: KernelSpec,
        ref: list[torch.Tensor],
        dtype: str | None,
        exact: Yardstick | None = None,
    ):
        stated = spec.tolerances.get(dtype or tensors.dtype_name(ref[0].dtype))
        wide: list = exact.outputs if exact and exact.outputs else []
        if len(wide) != len(ref):
            wide = [None] * len(ref)
        why = (exact.why if exact else "") or "not run"
        self.ref = ref
        self.sides = [_prepare(r, x, stated, why) for r, x in zip(ref, wide)]

    def judge(self, case: CaseResult, out: list[torch.Tensor]) -> None:
        """Fill `case` with the verdict on the kernel's outputs `out`."""
        _same_structure(out, self.ref)
        judged = _judge_all(out, self.sides)
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
                case.stochastic = _stochastic(out, self.ref, judged)
            if case.stochastic and stochastic.same_distribution(case.stochastic):
                case.status = "passed"
            case.reason = _why(case, judged)


@dataclass
class _Side:
    """One reference output as a yardstick: the rule and bounds it gives any kernel's output."""

    shape: Shape
    r: torch.Tensor
    """The reference's output at the test dtype, flat."""
    y: torch.Tensor
    """What the kernel's output is measured against, flat: the wider run's output, else `r`."""
    against: str
    note: str
    rule: str
    reference: tuple[float, float] | None
    bound: tuple[float | None, float | None]
    tolerance: Tolerance | None
    scale: float
    den2: float
    """The sum of the yardstick's finite squares."""


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


def _prepare(r: torch.Tensor, x: torch.Tensor | None, stated: Tolerance | None, why: str) -> _Side:
    """The yardstick for the kernel's outputs in `r`'s place: the wider run `x` unless the rule
    is stated or exact, `x` is not wider, or it is another function than `r`'s."""
    integral = not r.is_floating_point()
    if stated or integral or not _wider(x, r):
        x = None
    note = why if x is None and not (stated or integral) else ""
    reference = None
    scale, den2 = _norm(r if x is None else x)
    if x is not None:
        reference = _own_error(r, x, scale, den2)
        if reference[0] > GROSS_REL_L2:
            note = (
                f"its {tensors.dtype_name(x.dtype)} run is another function: "
                f"relative L2 {reference[0]:.2g} apart"
            )
            x, reference = None, None
            scale, den2 = _norm(r)
    shape, flat_r = tuple(r.shape), _flat(r)
    y = flat_r if x is None else _flat(x)
    against = tensors.dtype_name(x.dtype) if x is not None else ""
    side = (shape, flat_r, y, against, note)
    if integral:
        return _Side(*side, "exact", reference, (None, 0.0), None, scale, den2)
    if stated:
        return _Side(*side, "stated", reference, (stated.rel_l2, None), stated, scale, den2)
    ref_l2, ref_max = reference or (0.0, 0.0)
    bound = (
        max(FACTOR * ref_l2, floor(r.dtype, FLOOR_L2_ULPS)),
        max(WORST_FACTOR * ref_max, floor(r.dtype)),
    )
    tolerance = Tolerance(bound[1] * scale, bound[1], bound[0])
    return _Side(*side, "calibrated", reference, bound, tolerance, scale, den2)


def _norm(y: torch.Tensor) -> tuple[float, float]:
    """The RMS of `y`'s finite elements and the sum of their squares."""
    total, n = 0.0, 0
    for _, y64 in _chunks(y):
        finite = torch.isfinite(y64)
        total += float(y64.where(finite, 0.0).square().sum())
        n += int(finite.sum())
    return (math.sqrt(total / n) if n else 0.0), total


def _own_error(r: torch.Tensor, x: torch.Tensor, scale: float, den2: float) -> tuple[float, float]:
    """The reference's relative L2 error and worst element's against its wider run `x`."""
    ref2 = worst = 0.0
    for (_, r64), (_, x64) in zip(_chunks(r), _chunks(x.to(r.device))):
        ref2 += float(torch.where(torch.isfinite(x64), r64 - x64, 0.0).square().sum())
        worst = max(worst, float(_relative(_diff(r64, x64), x64, scale).max()))
    return _rel(ref2, den2), worst


def _judge_all(out: list[torch.Tensor], sides: list[_Side]) -> list[_Judged]:
    """Each output's errors against its side: one pass over the outputs, their per-chunk sums,
    maxima and counts gathered on the device and read at once; then, in the chunks that hold
    them only, NaN/Inf sorted (where the reference has none) and the wrong elements' indices."""
    flats = [_flat(o) for o in out]
    sums, masks = [], []
    for o, side in zip(flats, sides):
        for start, raw in _chunks(o, double=False):
            row, bad = _chunk_sums(raw, side, start)
            sums.append(row)
            masks.append(bad)
    read = iter(torch.stack(sums).tolist() if sums else [])
    marks = iter(masks)
    judged = []
    for o, side in zip(flats, sides):
        j = _Judged(
            side.shape,
            side.rule,
            side.against,
            side.note,
            reference=side.reference,
            bound=side.bound,
            tolerance=side.tolerance,
            numel=side.r.numel(),
        )
        num2 = worst = 0.0
        for start, raw in _chunks(o, double=False):
            odd, rel_max, at, max_abs, chunk_num2, bad = next(read)
            bad_mask = next(marks)
            if odd:
                _count_nonfinite(j, raw, side.r[start : start + raw.numel()].to(raw.device))
            if rel_max > worst or start == 0:
                worst, j.worst_at = max(worst, rel_max), start + int(at)
            j.max_abs = max(j.max_abs, max_abs)
            num2 += chunk_num2
            j.bad += int(bad)
            if len(j.bad_at) < MAX_BAD_INDICES and bad:
                j.bad_at.append(torch.nonzero(bad_mask).reshape(-1) + start)
        j.kernel = (_rel(num2, side.den2), worst)
        judged.append(j)
    return judged


def _chunk_sums(raw: torch.Tensor, side: _Side, start: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk of an output against its side, on the device: (its NaN/Inf, the worst relative
    error and where, the largest absolute error, the sum of squared errors, the wrong elements'
    count) and the mask of the wrong elements."""
    y64 = side.y[start : start + raw.numel()].to(raw.device).double()
    o64 = raw.double()
    odd = torch.isfinite(o64).logical_not_().sum()
    finite = torch.isfinite(y64)
    d = _diff(o64, y64)
    rel = _relative(d, y64, side.scale, finite)
    # d squares as o - y does where both are finite; elsewhere both sums end in inf or NaN,
    # which `_rel` reads alike
    num2 = d.where(finite, 0.0).square().sum()
    if side.rule == "stated" and side.tolerance:
        tol = side.tolerance
        allowed = tol.atol + tol.rtol * y64.abs().where(finite, 0)  # y is r
        bad = d > allowed
    else:
        bad = rel > (side.bound[1] or 0.0)
    worst, at = rel.max(dim=0)  # the first of equal maxima, as argmax
    sums = [odd, worst, at, d.max(), num2, bad.sum()]
    return torch.stack([s.double() for s in sums]), bad


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
    # NaN only where one is NaN (inf apart), or both are (0), or both the same infinity (0)
    special = torch.where(torch.isnan(a64) == torch.isnan(y64), 0.0, math.inf)
    return torch.where(torch.isnan(d), special, d)


def _relative(
    d: torch.Tensor, y64: torch.Tensor, scale: float, finite: torch.Tensor | None = None
) -> torch.Tensor:
    """Each error relative to its value, or to the output's RMS where that is larger (errors
    of values near zero are those of the larger terms that cancelled there); 0 where the
    error is, inf where a value of an all-zero output is off. `finite`: y64's, if at hand."""
    finite = torch.isfinite(y64) if finite is None else finite
    norm = y64.abs().where(finite, 1.0).clamp(min=scale)
    return torch.where(d == 0, 0.0, d / norm)


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


def _chunks(t: torch.Tensor, double: bool = True) -> Iterator[tuple[int, torch.Tensor]]:
    """(start, elements) per CHUNK of `t`'s flat elements, in float64 unless `double` is off."""
    flat = _flat(t)
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start : start + CHUNK]
        yield start, part.double() if double else part


def _flat(t: torch.Tensor) -> torch.Tensor:
    """`t`'s elements in row-major order (a copy only where `t` is not contiguous)."""
    return t.detach().reshape(-1)


def _count_nonfinite(j: _Judged, raw: torch.Tensor, r: torch.Tensor) -> None:
    """Sort NaN/Inf outputs where the reference `r` has no NaN by where they came from."""
    odd, finite_ref = ~torch.isfinite(raw) & ~torch.isnan(r), torch.isfinite(r)
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
        for (_, o64), (_, r64) in zip(_chunks(o), _chunks(r.to(o.device))):
            tally.add(o64, r64, tol)
    return tally.judge(tol)


def _why(case: CaseResult, judged: list[_Judged]) -> str:
    if case.stochastic:
        return stochastic.describe(case.stochastic)
    parts = []
    if case.unwritten:
        parts.append(f"{case.unwritten} of {case.numel} outputs not written (still the poison NaN)")
    if case.read_padding:
        parts.append(
            f"{case.read_padding} outputs hold the NaN of the strided input's padding "
            "(read outside the input's view)"
        )
    if case.nonfinite:
        parts.append(f"{case.nonfinite} outputs NaN/Inf where the reference is finite")
    for j in judged:
        parts += _over(j)
    if case.boundary_only:
        parts.append(f"all within the last partial tile of {verdict.tail_words([case])}")
    return "; ".join(parts)


def _over(j: _Judged) -> list[str]:
    """What one output exceeds beyond its NaN/Inf, with what it was allowed."""
    l2, worst = j.bound
    off = j.bad - j.unwritten - j.read_padding - j.nonfinite
    yardstick = f"the {j.against} run" if j.against else "the reference"
    said = []
    if j.rule == "calibrated":
        ref = j.reference or (0.0, 0.0)
        if off > 0:
            said.append(
                f"{off} of {j.numel} elements off {yardstick} by more than {worst:.3g} of "
                f"max(|value|, RMS) (worst {j.kernel[1]:.3g}; the reference's {ref[1]:.3g})"
            )
        if j.l2_over and math.isfinite(j.kernel[0]):
            said.append(
                f"relative L2 error {j.kernel[0]:.3g} > {l2:.3g} against {yardstick} "
                f"(the reference's {ref[0]:.3g})"
            )
    elif j.rule == "stated":
        if off > 0:
            said.append(f"{off} of {j.numel} elements outside the spec's tolerance")
        if j.l2_over and math.isfinite(j.kernel[0]):
            said.append(f"relative L2 error {j.kernel[0]:.3g} > the spec's {l2:g}")
    elif off > 0:
        said.append(f"{off} of {j.numel} integer elements differ")
    return said


def _unravel(flat: int, shape: Shape) -> list[int]:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return list(reversed(idx))


def boundary_blocks(bad_flat: torch.Tensor, shape: Shape) -> list[int]:
    """Every power-of-two block B (16..largest size) whose partial last tile holds all wrong
    elements, smallest first.

    With a tile of B elements along a dimension of size s (s % B != 0), the partial tile covers
    indices >= s // B * B. Errors confined there are the signature of a missing or wrong mask;
    a few wrong elements fit many widths, and the widths several shapes share narrow them down.
    `bad_flat` holds the flat (row-major) indices of the wrong elements.
    """
    if bad_flat.numel() == 0 or not shape:
        return []
    coords, rest = [], bad_flat
    for size in reversed(shape):
        coords.append(rest % size)
        rest = rest // size
    coords.reverse()
    found, block = [], 16
    while block <= max(shape):
        in_tail = torch.zeros_like(bad_flat, dtype=torch.bool)
        for idx, size in zip(coords, shape):
            if size % block and size >= block:
                in_tail |= idx >= size // block * block
        if bool(in_tail.all()):
            found.append(block)
        block *= 2
    return found


def boundary_block(bad_flat: torch.Tensor, shape: Shape) -> int | None:
    """The smallest of `boundary_blocks`, None when there is none."""
    return next(iter(boundary_blocks(bad_flat, shape)), None)
