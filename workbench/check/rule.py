"""The calibrated rule's numbers and its words (pure: the views state the rule it judged by).

A floating-point output passes when, in each of two norms (its relative L2 error, and its worst
element's error relative to max(|value|, RMS of the output)), the kernel's error against the
reference's run on wider inputs is at most max(FACTOR x the reference's own error at the test
dtype, the floor), WORST_FACTOR x for the worst element: the floor is FLOOR_ULPS ulps of the
output dtype for an element, FLOOR_L2_ULPS in L2, and no less than
REORDER_ULPS ulps of the accumulator (`check.compare.floor`). A spec's own tolerance for a dtype
replaces the rule there; integer outputs must be equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.check.result import CaseResult

FACTOR = 4.0
"""The kernel and the reference compute one function at one dtype, each rounding in its own
places and order, so their errors against the wider run are of one size: both round the output
once (half an ulp at most), and the fp32 arithmetic before that differs only in order, far below
a 16-bit output's rounding. A kernel may round once more than the reference (an intermediate
kept at the test dtype: twice the worst element's error, sqrt(2) times the L2 one), and the
worst of a few thousand elements varies from draw to draw by tens of percent: 2 x 2. A 16-bit
accumulator rounds K / BLOCK_K times; its error grows like the square root of that count and
passes four single roundings after some 16 to 32 of them: against a reference that rounds once,
the bug fails from K of about three thousand on (BLOCK_K = 64: relative L2 8.2e-3 at K = 3073
against 4 x 1.65e-3)."""
WORST_FACTOR = 16.0
"""The worst element's own factor. A fused kernel keeps intermediates at the test dtype
(attention's scores and probabilities, a norm's statistics): each is one more rounding, and on
the worst of a million elements they line up to several ulps beyond a reference that rounds
once (Liger's neighborhood attention: 55 of 1M bf16 elements at 6 to 8 times the reference's
worst, its relative L2 1.7x the reference's). Sixteen times (two more bits) admits that; a wrong
value (a missed mask, a stale tile) is off by its own size, far beyond, and the L2 norm holds the
average to FACTOR, which a long low-precision accumulation outgrows."""
FLOOR_ULPS = 2.0
"""Errors within this many ulps of the output dtype pass whatever the reference's own error:
an exact reference (a copy, a max) has none, yet a kernel that rounds once or twice where it
does not is right."""
FLOOR_L2_ULPS = 1.0
"""The floor in the relative L2 norm: one correct rounding is about a fifth of an ulp RMS (the
reference's own, measured: 0.21 for bf16), so one ulp admits a kernel off by an ulp at most
elements where an exact reference is exact; two ulps there (the element floor) admitted a bf16
running sum over K = 3073 at five times the reference's error."""
REORDER_ULPS = 64.0
"""The floor's part for the arithmetic before the output, in ulps of the accumulator (fp32, or
the output dtype if wider): a sum of n terms in another order than the reference's is off by
about sqrt(n) ulps of its running value; 64 covers sums of 4096 terms. It sets the floor of fp32
outputs (7.6e-6); for 16-bit outputs their own two ulps are larger."""
GROSS_REL_L2 = 0.1
"""The reference's relative L2 error against its wider run from which the two are not one
function (another random stream, a branch on the dtype): rounding stays orders of magnitude
below. Then the reference at the test dtype is the yardstick, as without a wider run."""


def words(cases: Sequence[CaseResult]) -> list[str]:
    """The rule(s) the check's cases were judged by, one line each."""
    ran = [c for c in cases if c.rule]
    said = []
    wider = sorted({c.against for c in ran if c.rule == "calibrated" and c.against})
    if wider:
        said.append(
            f"kernel error against the reference on {' / '.join(wider)} inputs <= max({FACTOR:g} "
            f"x the reference's own error at the test dtype, {FLOOR_ULPS:g} ulps of the output "
            f"dtype ({FLOOR_L2_ULPS:g} in L2), {REORDER_ULPS:g} of fp32) in relative L2, and "
            f"<= {WORST_FACTOR:g} x in the worst element (relative to max(|value|, RMS))"
        )
    notes = sorted({c.against_note for c in ran if c.rule == "calibrated" and not c.against})
    said += [
        f"kernel error against the reference at the test dtype <= {FLOOR_ULPS:g} ulps of the "
        f"output dtype ({REORDER_ULPS:g} of fp32): no wider run ({note})"
        for note in notes
    ]
    stated = sorted({c.dtype for c in ran if c.rule == "stated"})
    if stated:
        said.append(f"the spec's own tolerance for {', '.join(stated)}")
    if any(c.rule == "exact" for c in ran):
        said.append("integer outputs equal to the reference's")
    return said
