"""Compare a kernel's outputs with its reference's, in float64 (pure torch, any device).

A case fails on elements outside the dtype's tolerance, on outputs left unwritten (still NaN
from the poisoned allocation) or on a relative L2 error above the bound; errors confined to the
last partial tile of some power-of-two block are named, the signature of a missing mask.
"""

from __future__ import annotations

import math

import torch

from workbench.catalog.spec import KernelSpec, Shape
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
