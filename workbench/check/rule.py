"""The calibrated rule's numbers and its words (pure: the views state the rule it judged by).

A floating-point output passes when, in each of two norms (its relative L2 error, and its worst
element's error relative to max(|value|, RMS of the output)), the kernel's error against the
reference's run on wider inputs is at most max(FACTOR x the reference's own error at the test
dtype, the floor): the floor is FLOOR_ULPS ulps of the output dtype, and no less than
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
the bug fails from K of a thousand or two on."""
FLOOR_ULPS = 2.0
"""Errors within this many ulps of the output dtype pass whatever the reference's own error:
an exact reference (a copy, a max) has none, yet a kernel that rounds once or twice where it
does not is right."""
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
            f"dtype, {REORDER_ULPS:g} of fp32), in relative L2 and in the worst element "
            "(relative to max(|value|, RMS))"
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
