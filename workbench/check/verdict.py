"""The facts of a whole check and the one verdict they add up to (pure: no torch).

Per-case facts (`CaseResult`) say what went wrong where; these say what the cases have in
common: errors only with strided inputs, only in the tail tile, only at irregular shapes, an
error that grows with one dimension, run-to-run differences, another random stream. The verdict
is the most specific of them, a short phrase with the fix to try (`FIXES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.catalog.spec import DEFAULT_TOLERANCES

if TYPE_CHECKING:
    from workbench.check.result import CaseResult

CORRECT = "correct"
STRIDES = "assumes contiguous inputs"
TAIL = "tail not covered (missing mask)"
IRREGULAR = "wrong only at irregular shapes"
SCALE = "kept values scaled wrongly"
KEEP_RATE = "keep rate off"
UNWRITTEN = "outputs not written"
PADDING = "reads outside its inputs"
NONFINITE = "NaN/Inf produced"
NONDETERMINISTIC = "not deterministic"
TREND = "error grows with size (low-precision accumulation)"
STREAM = "same distribution, different RNG stream"
WRONG = "wrong results"
RAISED = "raised errors"
NOT_RUN = "not run (every case skipped)"

FIXES = {
    STRIDES: "pass the strides to the kernel and use them in its address arithmetic, or call "
    ".contiguous() on the inputs in the wrapper",
    TAIL: "mask every tl.load and tl.store with offs < n (other= on loads) and size the grid "
    "with triton.cdiv",
    IRREGULAR: "check masks, grid and index arithmetic for sizes that are not multiples of the "
    "block (triton.cdiv, offs < n on every dimension)",
    SCALE: "scale kept values by 1 / keep rate, the reference's factor",
    KEEP_RATE: "keep an element with the reference's probability (1 - p): compare the draw with "
    "p the way the reference does",
    UNWRITTEN: "cover every output element: the grid (triton.cdiv of each size by its block) "
    "and the store mask",
    PADDING: "index every input with its strides (or call .contiguous() in the wrapper) and "
    "mask loads at the input's end",
    NONFINITE: "guard divisions and logs with an epsilon, subtract the row max before exp, "
    "and accumulate in fp32",
    NONDETERMINISTIC: "replace tl.atomic_add across programs by a two-pass reduction "
    "(per-block partials, then one combine)",
    TREND: "accumulate in fp32 (tl.zeros(..., dtype=tl.float32)) and round once at the store",
    STREAM: "nothing to fix; to compare element by element, let the reference rebuild the "
    "kernel's keep-mask from the same seed",
    RAISED: "read the case errors: each names its file and line",
}

DERIVED = "derived"
"""The set of a three-name module's irregular sizes (`catalog.loader.DERIVED`; the loader, which
imports Triton, stays out of the UI's process)."""
REGULAR_MULTIPLE = 16
"""In a check whose sets are not named regular and irregular, a shape with every size a
multiple of this is regular: the smallest block a kernel tiles with."""
TREND_MIN_SPAN, TREND_MIN_GROWTH = 8, 4
TREND_FLOOR = 0.01
"""Of the dtype's default L2 bound: errors below it count as this much (rounding noise, or
exactly 0 at a small size), so a trend must rise well above it."""


def derived(case: CaseResult) -> bool:
    """A case the workbench made from the module's own inputs: strided copies of them, or the
    irregular sizes cut from a three-name module's get_inputs() (the given ones are the rest)."""
    return case.layout == "strided" or case.shape_set == DERIVED


def stride_only(cases: Sequence[CaseResult]) -> bool:
    failed = [c for c in cases if c.status == "failed"]
    contiguous_ok = {
        (c.shape_set, tuple(c.shape), c.dtype)
        for c in cases
        if c.layout == "contiguous" and c.status == "passed"
    }
    return bool(failed) and all(
        c.layout == "strided" and (c.shape_set, tuple(c.shape), c.dtype) in contiguous_ok
        for c in failed
    )


def boundary_only(cases: Sequence[CaseResult]) -> bool:
    failed = [c for c in cases if c.status == "failed"]
    return bool(failed) and all(c.boundary_only for c in failed)


def irregular(case: CaseResult, named: bool) -> bool | None:
    """Whether a case's shape is not a multiple of a block. Where the kernel names its sets
    (`named`), the names say so: "irregular" (or "derived", cut from a three-name module's
    inputs) and "regular"; any other set is neither (None), as its name means something else
    ("wide", "k"). Without such names, the sizes say so: some size not a multiple of
    REGULAR_MULTIPLE."""
    if case.shape_set in ("irregular", DERIVED):
        return True
    if case.shape_set == "regular":
        return False
    return None if named else any(size % REGULAR_MULTIPLE for size in case.shape)


def irregular_only(cases: Sequence[CaseResult]) -> bool:
    """Every failure at an irregular shape, and the regular shapes all ran and passed."""
    named = any(c.shape_set in ("regular", "irregular") for c in cases)
    failed = [c for c in cases if c.status == "failed"]
    regular = [c for c in cases if c.status != "skipped" and irregular(c, named) is False]
    return (
        bool(failed)
        and bool(regular)
        and all(irregular(c, named) for c in failed)
        and all(c.status == "passed" for c in regular)
    )


def nondeterministic(cases: Sequence[CaseResult]) -> bool:
    """Run-to-run differences; a kernel drawing a fresh random stream per call is exempt."""
    return any(c.deterministic is False and c.stochastic is None for c in cases)


def error_trend(cases: Sequence[CaseResult]) -> dict | None:
    """The relative L2 error growing more than TREND_MIN_GROWTH-fold across at least a
    TREND_MIN_SPAN-fold growth of one dimension, the others fixed (contiguous cases of one
    dtype): the signature of accumulating in low precision. The steepest such trend.

    Where the check measured the reference's own error at the test dtype, the growth is of the
    kernel's error over it: an element-wise fp16 op errs by the same rounding at every size as
    its reference does (0 at one element, 2e-4 at a thousand is no trend); a running sum in fp16
    grows past a reference that rounds once."""
    groups: dict[tuple, dict[int, tuple[float, float]]] = {}
    for c in cases:
        if c.layout != "contiguous" or c.status not in ("passed", "failed") or c.stochastic:
            continue
        if c.rel_l2 is None or c.rel_l2 != c.rel_l2 or c.rel_l2 == float("inf"):
            continue
        floor = TREND_FLOOR * DEFAULT_TOLERANCES.get(c.dtype, DEFAULT_TOLERANCES["float32"]).rel_l2
        own = max(c.ref_rel_l2, floor) if c.ref_rel_l2 is not None else floor
        growth = max(c.rel_l2, floor) / own
        for dim, size in enumerate(c.shape):
            others = (*c.shape[:dim], *c.shape[dim + 1 :])
            by_size = groups.setdefault((c.dtype, len(c.shape), dim, others), {})
            if size not in by_size or growth > by_size[size][0]:
                by_size[size] = (growth, c.rel_l2)
    best: dict | None = None
    steepest = float(TREND_MIN_GROWTH)
    for (_, _, dim, _), by_size in groups.items():
        sizes = sorted(by_size)
        first, last = by_size[sizes[0]][0], by_size[sizes[-1]][0]
        if sizes[-1] >= TREND_MIN_SPAN * sizes[0] and last / first > steepest:
            steepest = last / first
            best = {"dim": dim, "sizes": sizes, "rel_l2": [by_size[s][1] for s in sizes]}
    return best


def verdict(cases: Sequence[CaseResult], facts: dict) -> str:
    """The one phrase for the whole check, the most specific fact first. `facts` holds the
    summary's booleans and error_trend."""
    ran = [c for c in cases if c.status != "skipped"]
    failed = [c for c in ran if c.status == "failed"]
    if not ran:
        return NOT_RUN
    if not failed:
        if any(c.status == "error" for c in ran):
            return RAISED
        if facts["nondeterministic"]:
            return NONDETERMINISTIC
        return STREAM if facts["stochastic"] else CORRECT
    if facts["stride_only_errors"]:
        return STRIDES
    if facts["boundary_only_errors"]:
        return TAIL
    if facts["irregular_only_errors"]:
        return IRREGULAR
    streams = [c.stochastic for c in failed if c.stochastic]
    if any(not s["scale_ok"] for s in streams):
        return SCALE
    if any(not s["rate_ok"] for s in streams):
        return KEEP_RATE
    for count, phrase in (("unwritten", UNWRITTEN), ("read_padding", PADDING)):
        if any(getattr(c, count) for c in failed):
            return phrase
    if any(c.nonfinite for c in failed):
        return NONFINITE
    if facts["nondeterministic"]:
        return NONDETERMINISTIC
    return TREND if facts["error_trend"] else WRONG


def facts(cases: Sequence[CaseResult]) -> dict:
    """What the cases have in common, as the summary and `verdict` read them."""
    return {
        "stride_only_errors": stride_only(cases),
        "boundary_only_errors": boundary_only(cases),
        "irregular_only_errors": irregular_only(cases),
        "nondeterministic": nondeterministic(cases),
        "stochastic": any(c.stochastic for c in cases),
        "error_trend": error_trend(cases),
    }


def part(cases: Sequence[CaseResult], context: Sequence[CaseResult] = ()) -> dict:
    """Counts and the verdict of some cases: the given ones, or the derived ones, which are
    judged beside the given cases that passed (`context`: a strided case fails "only with
    strided inputs" against its contiguous twin)."""
    judged = [*cases, *context]
    counts = {s: sum(c.status == s for c in cases) for s in ("passed", "failed", "skipped")}
    counts["errors"] = sum(c.status == "error" for c in cases)
    return {"cases": len(cases), **counts, "verdict": verdict(judged, facts(judged))}


def wrong(part_: dict) -> bool:
    """Whether a part's cases include failures or errors."""
    return bool(part_["failed"] or part_["errors"])


def tail(cases: Sequence[CaseResult]) -> dict | None:
    """Where the failed cases that are wrong only in their last partial tile agree: the block
    widths all of them fit ("blocks"), the launched constexpr among those widths ("name",
    "block": the kernel's own block, when one value is), and "floors" when the launch ran as
    many programs as whole blocks along a size (n // BLOCK, not triton.cdiv). None without
    such a case."""
    tails = [c for c in cases if c.status == "failed" and c.boundary_only]
    if not tails:
        return None
    widths = set.intersection(*(set(_widths(c)) for c in tails))
    named: dict[int, list[str]] = {}
    for c in tails:
        for launch in c.launches:
            for name, value in launch.get("constexprs", {}).items():
                if value in widths and name not in named.setdefault(value, []):
                    named[value].append(name)
    block = next(iter(named)) if len(named) == 1 else None
    floors = block is not None and any(
        size % block and size // block in launch.get("grid", [])
        for c in tails
        for launch in c.launches
        for size in c.shape
    )
    return {
        "cases": len(tails),
        "blocks": sorted(b for b in widths if b),
        "block": block,
        "name": "=".join(named[block]) if block else None,
        "floors": floors,
    }


def _widths(case: CaseResult) -> list[int]:
    """The block widths a case's tail fits; for a result stored with only the smallest, every
    power of two from it up to the largest size (wider blocks' tails hold narrower ones')."""
    if case.boundary_blocks or not case.boundary_block:
        return case.boundary_blocks
    widths = [case.boundary_block]
    while widths[-1] * 2 <= max(case.shape, default=0):
        widths.append(widths[-1] * 2)
    return widths


def tail_words(cases: Sequence[CaseResult]) -> str:
    """The block the tail belongs to, in words: the kernel's own, or the widths that fit."""
    found = tail(cases)
    if found and found["block"]:
        return f"a {found['block']}-wide block ({found['name']}={found['block']})"
    blocks = found["blocks"] if found else []
    if len(blocks) == 1:
        return f"a {blocks[0]}-wide block"
    if blocks:
        return f"a block {blocks[0]} to {blocks[-1]} wide"
    return "a block"
