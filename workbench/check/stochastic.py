"""Is a mismatch a different random stream? The test for dropout-like kernels (pure torch).

A dropout kernel drawing from another generator than its reference zeroes other elements, so an
element-wise comparison fails although both outputs come from the same distribution. The
signature: the elements that differ are those that exactly one side zeroed, each side zeroing
some that the other kept, while wherever both kept a value the two agree. Then the verdict rests
on what a stream cannot change: the kept fractions agree within a binomial bound for n
elements, and the kept values carry the same scale (1 / keep rate). Kept values that differ by
one constant factor mean a wrong scale; values that differ otherwise are not a stream's doing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from workbench.catalog.spec import Tolerance

Z = 5.0
"""Standard deviations the keep rates may differ by: a false alarm about once in 3 million."""
MIN_EXPECTED_SWAPS = 5.0
"""Below this many expected one-sided drops a small output cannot show both sides dropping."""


@dataclass
class ZeroTally:
    """Counts over the elements where both outputs are finite, gathered chunk by chunk."""

    n: int = 0
    out_zero: int = 0
    ref_zero: int = 0
    out_only: int = 0
    """Zero in the kernel's output, non-zero in the reference's."""
    ref_only: int = 0
    kept_bad: int = 0
    """Elements both kept that differ beyond the tolerance."""
    s_or: float = 0.0
    s_rr: float = 0.0
    s_oo: float = 0.0

    def add(self, o64: torch.Tensor, r64: torch.Tensor, tol: Tolerance) -> None:
        both = torch.isfinite(o64) & torch.isfinite(r64)
        zo, zr = (o64 == 0) & both, (r64 == 0) & both
        kept = both & ~zo & ~zr
        self.n += int(both.sum())
        self.out_zero += int(zo.sum())
        self.ref_zero += int(zr.sum())
        self.out_only += int((zo & ~zr).sum())
        self.ref_only += int((zr & ~zo).sum())
        ok, rk = o64[kept], r64[kept]
        self.kept_bad += int(((ok - rk).abs() > tol.atol + tol.rtol * rk.abs()).sum())
        self.s_or += float((ok * rk).sum())
        self.s_rr += float((rk * rk).sum())
        self.s_oo += float((ok * ok).sum())

    def judge(self, tol: Tolerance) -> dict | None:
        """The `stochastic` fact of a failing case, or None when its errors are not those of
        another random stream."""
        if not self.n or not (self.out_only + self.ref_only):
            return None
        keep = 1.0 - self.out_zero / self.n
        ref_keep = 1.0 - self.ref_zero / self.n
        q = (keep + ref_keep) / 2
        if self.n * q * (1 - q) >= MIN_EXPECTED_SWAPS and not (self.out_only and self.ref_only):
            return None  # zeros only added (or only lost): a bug that zeroes, not a stream
        scale = 1.0
        if self.kept_bad:
            if not (self.s_rr and self.s_oo):
                return None
            scale = self.s_or / self.s_rr
            misfit = math.sqrt(max(self.s_oo - self.s_or**2 / self.s_rr, 0.0) / self.s_oo)
            if misfit > tol.rel_l2:
                return None  # kept values disagree by more than one factor
            if abs(scale - 1.0) <= tol.rel_l2:
                return None  # by no factor at all: imprecise values, a zero or two by chance
        bound = min(1.0, Z * math.sqrt(2 * q * (1 - q) / self.n) + 1 / self.n)
        return {
            "keep_rate": keep,
            "ref_keep_rate": ref_keep,
            "rate_bound": bound,
            "rate_ok": abs(keep - ref_keep) <= bound,
            "scale": scale,
            "scale_ok": not self.kept_bad,
        }


def same_distribution(fact: dict) -> bool:
    return bool(fact["rate_ok"] and fact["scale_ok"])


def describe(fact: dict) -> str:
    """The reason a stochastic case gives: why it passes, or what is off."""
    rates = (
        f"keeps {fact['keep_rate']:.2%}, the reference {fact['ref_keep_rate']:.2%} "
        f"(bound ±{fact['rate_bound']:.2%})"
    )
    if same_distribution(fact):
        return f"same distribution, different RNG stream: {rates}"
    parts = []
    if not fact["scale_ok"]:
        parts.append(f"kept values are {fact['scale']:.4g}x the reference's (scale 1/keep rate)")
    if not fact["rate_ok"]:
        parts.append(f"keep rate off: {rates}")
    return "another RNG stream, and " + "; ".join(parts)
