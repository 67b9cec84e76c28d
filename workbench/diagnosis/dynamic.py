"""Dynamic findings: what the check saw when it ran the kernel against its reference.

Read from `Facts.check` (a `CheckReport`): per case its status, errors, unwritten outputs,
`read_padding` (outputs holding the padding payload of strided input copies: inputs read out of
bounds or as if contiguous), `nonfinite` (NaN/Inf the kernel made) and `stochastic` (keep rates
when outputs differ like two RNG streams); in its summary the facts across cases
(`boundary_only_errors`, `irregular_only_errors`, `stride_only_errors`, `nondeterministic`,
`stochastic`, `error_trend`), whose thresholds are the check's (`check.verdict`).
"""

from __future__ import annotations

from workbench.check import verdict
from workbench.check.result import CaseResult
from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text, limit
from workbench.diagnosis.registry import detector

SHOWN_CASES = 4
"""Cases named in a finding's evidence; the count says how many there are."""
GROSS_REL_L2 = 0.1
"""Relative L2 error from which a case is wrong, not imprecise: rounding and accumulation
errors stay orders of magnitude below it; unread or unwritten elements give order 1."""


def _cases(facts: Facts) -> list[CaseResult]:
    return list(facts.check.cases) if facts.check else []


def _summary(facts: Facts) -> dict:
    return facts.check.summary() if facts.check else {}


def _failed(facts: Facts) -> list[CaseResult]:
    """Failed cases, but not those that differ only like two RNG streams."""
    return [c for c in _cases(facts) if c.status == "failed" and not c.stochastic]


def _where(cases: list[CaseResult]) -> list[str]:
    return [f"{'x'.join(map(str, c.shape))} {c.dtype} {c.layout}" for c in cases[:SHOWN_CASES]]


def _evidence(cases: list[CaseResult], **extra: object) -> dict:
    """The cases a finding rests on; "given" when one of them is on the module's own inputs
    (`rank` puts such a cause before one seen only on inputs derived from them)."""
    given = any(not verdict.derived(c) for c in cases)
    return {
        "source": "check",
        "cases": len(cases),
        "examples": _where(cases),
        "given": given,
        **extra,
    }


@detector("no-boundary-mask")
def missing_tail(facts: Facts) -> list[Finding]:
    """Errors only in the last, partial tile (left unwritten by a grid that floors the size,
    or wrong under a mask that stops short), or only at shapes that are not multiples of it.
    A tail is its own cause even beside other failures (strided ones, say)."""
    summary, failed = _summary(facts), _failed(facts)
    tails = [c for c in failed if c.boundary_only]
    if summary.get("boundary_only_errors"):
        how = "only in the last, partial tile"
    elif tails:
        how = f"in the last, partial tile in {len(tails)} of {len(failed)} failing case(s)"
    elif failed and summary.get("irregular_only_errors") and _width_split(facts) is None:
        how, tails = "only at shapes that are not multiples of the tile", failed
    else:
        return []
    tail = verdict.tail(tails) or {}
    block = f"{tail['name']}={tail['block']}" if tail.get("block") else None
    how += f" (the last n % {block or 'BLOCK'} elements)" if tail else ""
    unwritten = sum(c.unwritten for c in tails)
    read = sum(c.read_padding for c in tails)
    said = [f"{unwritten:,} outputs left unwritten"] if unwritten else []
    said += [f"{read:,} read past the inputs' bounds"] if read else []
    if tail.get("floors"):
        said.append(f"the grid launches n // {tail['name']} programs")
    evidence = _evidence(
        tails,
        unwritten=unwritten,
        read_padding=read,
        boundary_block=tail.get("block") or next(iter(tail.get("blocks") or []), None),
        block=block,
        parameter=tail.get("name"),
        floors=bool(tail.get("floors")),
        op="load and tl.store",
    )
    return [
        Finding(
            id="no-boundary-mask",
            title=f"wrong outputs {how}" + (f": {', '.join(said)}" if said else ""),
            severity="high",
            evidence=evidence,
            fix=fix_text("no-boundary-mask", evidence, "grid" if tail.get("floors") else None),
        )
    ]


@detector("assumes-contiguous")
def assumes_contiguous(facts: Facts) -> list[Finding]:
    """Wrong on non-contiguous views of cases that are right on contiguous inputs, or that
    leave outputs unwritten or read past an input only when the inputs are strided."""
    cases = _cases(facts)
    twins = {_key(c): c for c in cases if c.layout == "contiguous"}
    failed = [c for c in _failed(facts) if c.layout == "strided" and _key(c) in twins]
    wrong = [c for c in failed if twins[_key(c)].status == "passed"]
    misread = [
        c for c in failed if (c.unwritten or c.read_padding) and not _misaddressed(twins[_key(c)])
    ]
    strided = wrong or misread
    if not strided:
        return []
    read = sum(c.read_padding for c in strided)
    passed = sum(c.layout == "contiguous" and c.status == "passed" for c in cases)
    if wrong:
        title = (
            f"right on {passed} contiguous case(s), wrong on {len(wrong)} non-contiguous one(s): "
            "the kernel assumes contiguous inputs"
        )
    else:
        unwritten = sum(c.unwritten for c in strided)
        title = (
            f"only with non-contiguous inputs, {unwritten:,} outputs left unwritten in "
            f"{len(strided)} case(s): the kernel assumes contiguous inputs"
        )
    if read:
        title += f" ({read:,} outputs hold the strided copies' padding: read as if contiguous)"
    evidence = _evidence(strided, read_padding=read, contiguous_passed=passed)
    return [
        Finding(
            "assumes-contiguous",
            title,
            "high",
            evidence,
            fix_text("assumes-contiguous", evidence),
        )
    ]


def _key(case: CaseResult) -> tuple:
    return (case.shape_set, tuple(case.shape), case.dtype)


@detector("reduction-across-blocks")
def nondeterministic(facts: Facts) -> list[Finding]:
    """Two runs on the same inputs differ: a reduction whose order varies (float atomics)."""
    if not _summary(facts).get("nondeterministic"):
        return []
    cases = [c for c in _cases(facts) if c.deterministic is False]
    evidence = _evidence(cases)
    return [
        Finding(
            "reduction-across-blocks",
            f"two runs on the same inputs differ in {len(cases)} case(s): the order of a "
            "reduction across programs varies",
            "high",
            evidence,
            fix_text("reduction-across-blocks", evidence),
        )
    ]


@detector("accumulating-low-precision")
def error_growth(facts: Facts) -> list[Finding]:
    """The error grows with one dimension (K) far beyond what rounding the output gives: the
    check's error trend, which holds only trends past the row's span and growth."""
    trend = _summary(facts).get("error_trend")
    points = sorted(zip(trend.get("sizes") or [], trend.get("rel_l2") or [])) if trend else []
    if not trend or len(points) < 2:
        return []
    (s0, e0), (s1, e1) = points[0], points[-1]
    evidence = {
        "source": "check",
        "dim": trend.get("dim"),
        "sizes": [p[0] for p in points],
        "rel_l2": [p[1] for p in points],
        "growth": round(e1 / e0, 2) if e0 else None,
    }
    return [
        Finding(
            "accumulating-low-precision",
            f"the error grows with dim {trend.get('dim')}: relative L2 {e0:.1e} at {s0} to "
            f"{e1:.1e} at {s1}",
            "high" if _failed(facts) else "medium",
            evidence,
            fix_text("accumulating-low-precision", evidence),
        )
    ]


@detector("nan-inf")
def nan_inf(facts: Facts) -> list[Finding]:
    """NaN/Inf the kernel made on cases whose addressing is right (the module's own inputs,
    contiguous, nothing unwritten or read outside an input, not only in the tail): there they
    come from the arithmetic. Elsewhere they are what a tail, a layout or a bound the kernel
    gets wrong reads and writes, evidence of that cause and not a second one."""
    cases = [c for c in _cases(facts) if c.nonfinite and _addressed(c)]
    if not cases:
        return []
    count = sum(c.nonfinite for c in cases)
    dtypes = sorted({c.dtype for c in cases})
    evidence = _evidence(cases, nonfinite=count, dtypes=dtypes)
    return [
        Finding(
            "nan-inf",
            f"the kernel made {count:,} NaN/Inf where the reference is finite, in "
            f"{len(cases)} case(s) ({', '.join(dtypes)})",
            "high",
            evidence,
            fix_text("nan-inf", evidence, "float16" if dtypes == ["float16"] else None),
        )
    ]


@detector("rng-stream", "rng-keep-rate")
def rng_stream(facts: Facts) -> list[Finding]:
    """Outputs that differ like two random streams: info when the keep rate and the kept
    values' scale match the reference's (not a bug), a correctness finding when one is off."""
    cases = [c for c in _cases(facts) if c.stochastic]
    if not cases:
        return []
    both = ("rate_ok", "scale_ok")
    off = [c for c in cases if not all((c.stochastic or {}).get(k) for k in both)]
    first = (off or cases)[0].stochastic or {}
    shown = ", ".join(f"{k.replace('_', ' ')} {v:.3g}" for k, v in first.items() if _is_number(v))
    if not off:
        evidence = _evidence(cases, rates=first)
        title = "same distribution, different RNG stream" + (f": {shown}" if shown else "")
        return [Finding("rng-stream", title, "info", evidence, fix_text("rng-stream", evidence))]
    what = "scale" if not first.get("scale_ok") else "rate"
    evidence = _evidence(off, rates=first)
    title = {
        "scale": "kept values are scaled wrongly",
        "rate": "the keep rate is off",
    }[what] + f" in {len(off)} case(s): {shown}"
    return [
        Finding("rng-keep-rate", title, "high", evidence, fix_text("rng-keep-rate", evidence, what))
    ]


@detector("rows-wider-than-block")
def rows_wider(facts: Facts) -> list[Finding]:
    """Wrong values exactly on the widest rows: every failing row is wider than every passing
    one, and the errors are wrong or unwritten values, not imprecise ones."""
    split = _width_split(facts)
    if split is None:
        return []
    widest, narrowest = split
    failed = _failed(facts)
    evidence = _evidence(failed, widest_passing=widest, narrowest_failing=narrowest)
    return [
        Finding(
            "rows-wider-than-block",
            f"right on rows up to {widest} wide, wrong from {narrowest}: a program covers "
            "fewer columns than a row has",
            "high",
            evidence,
            fix_text("rows-wider-than-block", evidence),
        )
    ]


def _width_split(facts: Facts) -> tuple[int, int] | None:
    """(widest passing row, narrowest failing row) when the failures are exactly the wide rows;
    errors in the tail tile or on strided inputs are explained otherwise."""
    summary, failed = _summary(facts), _failed(facts)
    passed = [c for c in _cases(facts) if c.status == "passed" and c.shape]
    if not failed or not passed:
        return None
    if summary.get("boundary_only_errors") or summary.get("stride_only_errors"):
        return None
    if not all(c.shape and (c.unwritten or (c.rel_l2 or 0) >= GROSS_REL_L2) for c in failed):
        return None
    narrowest = min(c.shape[-1] for c in failed)
    widest = max(c.shape[-1] for c in passed)
    return (widest, narrowest) if narrowest > widest else None


@detector("tf32-mismatch")
def tf32_mismatch(facts: Facts) -> list[Finding]:
    """Only float32 fails, by TF32's rounding: a tl.dot on fp32 inputs (seen in the TTIR when
    the compile ran) against an IEEE reference."""
    failed = _failed(facts)
    low, high = limit("tf32-mismatch", "low"), limit("tf32-mismatch", "high")
    if not failed or any(c.dtype != "float32" for c in failed):
        return []
    if not all(c.rel_l2 is not None and low <= c.rel_l2 <= high for c in failed):
        return []
    compiled = facts.arch is not None
    if compiled and not any(f.id == "tf32-mismatch" for f in facts.compile_findings):
        return []
    worst = max(c.rel_l2 or 0.0 for c in failed)
    evidence = _evidence(failed, worst_rel_l2=worst, band=[low, high])
    return [
        Finding(
            "tf32-mismatch",
            f"float32 alone fails, by TF32 rounding: relative L2 up to {worst:.1e} in "
            f"{len(failed)} case(s)",
            "medium",
            evidence,
            fix_text("tf32-mismatch", evidence),
        )
    ]


@detector("c-integer-division")
def signed_division(facts: Facts) -> list[Finding]:
    """Wrong values where the TTIR divides a difference: Triton's // and % round toward zero."""
    static = [f for f in facts.compile_findings if f.id == "c-integer-division"]
    failed = _failed(facts)
    if not static or not failed or any(c.boundary_only for c in failed):
        return []
    evidence = _evidence(failed)
    return [
        Finding(
            "c-integer-division",
            f"wrong values in {len(failed)} case(s), and the kernel divides a difference that "
            "can be negative",
            "high",
            evidence,
            fix_text("c-integer-division", evidence),
        )
    ]


def _misaddressed(case: CaseResult) -> bool:
    """Outputs unwritten or inputs read outside their view: the addressing is wrong."""
    return bool(case.unwritten or case.read_padding)


def _addressed(case: CaseResult) -> bool:
    return not (verdict.derived(case) or _misaddressed(case) or case.boundary_only)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
