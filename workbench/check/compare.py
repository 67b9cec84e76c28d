"""Compare a kernel's outputs with its reference's, in float64 (pure torch, any device).

A case fails on elements outside the dtype's tolerance or on a relative L2 error above the
bound. NaN and Inf where the reference has none are told apart by their bits: the NaN that
poisoned a fresh allocation (an output left unwritten), the NaN in the gaps of a strided input
copy (an input read outside its view), or neither (the kernel made them). Errors confined to
the last partial tile of some power-of-two block are named, the signature of a missing mask.
A failure made only of elements zeroed on one side and kept on the other is weighed as another
random stream (`check.stochastic`): it passes when keep rate and scale match the reference's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from workbench.catalog.spec import KernelSpec, Shape, Tolerance
from workbench.check import stochastic
from workbench.check.result import CaseResult
from workbench.runtime import tensors
from workbench.runtime.errors import Problem, WorkbenchError

CHUNK = 1 << 24
"""Elements compared at a time: float64 copies of a 2^31-element output would not fit."""
MAX_BAD_INDICES = 1 << 20


def compare(
    spec: KernelSpec,
    case: CaseResult,
    out: list[torch.Tensor],
    ref: list[torch.Tensor],
    dtype: str | None,
) -> None:
    _same_structure(out, ref)
    tol = spec.tolerance(dtype or tensors.dtype_name(ref[0].dtype))
    worst = -math.inf
    num2 = den2 = 0.0
    for o, r in zip(out, ref):
        bad_at: list[torch.Tensor] = []
        for start, raw, o64, r64 in _chunks(o, r):
            finite = torch.isfinite(r64)
            odd = ~torch.isfinite(o64) & ~torch.isnan(r64)
            if bool(odd.any()):
                _count_nonfinite(case, raw, odd, finite)
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
        case.numel += r.numel()
        if bad_at:
            block = boundary_block(torch.cat(bad_at), tuple(r.shape))
            case.boundary_only, case.boundary_block = block is not None, block
    num = math.inf if math.isnan(num2) else math.sqrt(num2)
    den = math.sqrt(den2)
    case.rel_l2 = num / den if den else (0.0 if num == 0 else math.inf)
    poisoned = case.unwritten or case.read_padding or case.nonfinite
    if case.bad or poisoned or case.rel_l2 > tol.rel_l2:
        case.status = "failed"
        if not poisoned and not case.boundary_only:
            case.stochastic = _stochastic(out, ref, tol)
        if case.stochastic and stochastic.same_distribution(case.stochastic):
            case.status = "passed"
        case.reason = _why(case, tol.rel_l2)


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
    o: torch.Tensor, r: torch.Tensor
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(start, the kernel's elements as stored, both in float64) per CHUNK of flat elements."""
    flat_o, flat_r = o.detach().reshape(-1), r.detach().to(o.device).reshape(-1)
    for start in range(0, flat_r.numel(), CHUNK):
        raw = flat_o[start : start + CHUNK]
        yield start, raw, raw.double(), flat_r[start : start + CHUNK].double()


def _count_nonfinite(
    case: CaseResult, raw: torch.Tensor, odd: torch.Tensor, finite_ref: torch.Tensor
) -> None:
    """Sort NaN/Inf outputs where the reference has no NaN by where they came from."""
    payload = tensors.nan_payload(raw)
    nan = odd & torch.isnan(raw)
    unwritten = nan & (payload == tensors.UNWRITTEN)
    padding = nan & (payload == tensors.PADDING)
    case.unwritten += int(unwritten.sum())
    case.read_padding += int(padding.sum())
    case.nonfinite += int((odd & finite_ref & ~unwritten & ~padding).sum())


def _stochastic(out: list[torch.Tensor], ref: list[torch.Tensor], tol: Tolerance) -> dict | None:
    tally = stochastic.ZeroTally()
    for o, r in zip(out, ref):
        for _, _, o64, r64 in _chunks(o, r):
            tally.add(o64, r64, tol)
    return tally.judge(tol)


def _why(case: CaseResult, l2_bound: float) -> str:
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
