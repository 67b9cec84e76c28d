"""A sweep's rows read back (pure): pruning, ranking, one-line explanations of every loser,
agreement with Triton's own pick, and the smallest config set that stays near each shape's
best."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.bench.timing_rules import NOISE
from workbench.runtime.grammar import shape_text
from workbench.sweep import model
from workbench.sweep.buckets import key_buckets
from workbench.sweep.row import SweepRow, timed_ms

if TYPE_CHECKING:  # the result module reads its rows back through this one
    from workbench.sweep.result import SweepResult

RESULT_FILE = "sweep.json"
"""A sweep's rows as they land, in its run folder (what --resume reads)."""

NEAR_BEST = 0.05
"""The minimal set keeps every shape within 5 % of its best config."""
LOW_OCCUPANCY = 25.0
TIMED = "ok"
FAILED = ("failed", "wrong", "timeout")
STATUSES = (TIMED, "static", "pruned", "skipped", "wrong", "failed", "timeout")
"""static: compiled, not timed (no GPU); skipped: compiled, not chosen by the search strategy."""


def prune_reason(resources: dict | None, drop_spills: bool) -> str:
    """Why a compiled config is not worth timing ("" when it is): it cannot launch on the arch
    (shared memory or registers over the limit), or, for generated spaces, it spills."""
    if not resources:
        return ""
    occ = resources.get("occupancy") or {}
    if occ.get("limiter") == "launch":
        return f"does not fit the arch: {occ.get('reason')}"
    if drop_spills and resources.get("spill_bytes", 0) > 0:
        return f"spills {resources['spill_bytes']} bytes/thread"
    return ""


def within_noise(a: SweepRow, b: SweepRow) -> bool:
    """Two timings closer than NOISE, or than their p20-p80 spreads, are not told apart."""
    spread = (_spread(a) + _spread(b)) / 2
    a_ms, b_ms = timed_ms(a), timed_ms(b)
    return abs(a_ms - b_ms) <= max(NOISE * min(a_ms, b_ms), spread)


def _spread(row: SweepRow) -> float:
    """Its p20-p80 spread; 0 for a row without quantiles (NOISE alone tells it apart)."""
    p20, p80 = row["p20"], row["p80"]
    return 0.0 if p20 is None or p80 is None else p80 - p20


def by_shape(rows: Iterable[SweepRow]) -> dict[str, list[SweepRow]]:
    out: dict[str, list[SweepRow]] = {}
    for row in rows:
        out.setdefault(shape_text(row["shape"]), []).append(row)
    return out


def ranked(rows: Iterable[SweepRow]) -> list[SweepRow]:
    """Timed, correct rows, fastest first."""
    return sorted((r for r in rows if r["status"] == TIMED), key=timed_ms)


@dataclass(frozen=True)
class Verdict:
    """Why a config failed, was pruned, or loses to the best."""

    why: str
    brief: str
    """The same in a few words, for a narrow table."""
    gap: float | None = None
    """What the line leaves to a profile: the measured slowdown over the model's (None where
    it gives a static reason)."""


def explain(row: SweepRow, best: SweepRow | None, predicted: model.Prediction | None = None) -> str:
    """One line: why this config failed, was pruned, or loses to `best`; `predicted` is the
    static model's view of it against the best (`model.compare`)."""
    return verdict(row, best, predicted).why


def verdict(
    row: SweepRow, best: SweepRow | None, predicted: model.Prediction | None = None
) -> Verdict:
    """`explain`'s line, its brief and the gap it leaves to a profile."""
    if row["status"] in FAILED or row["status"] in ("pruned", "skipped"):
        problem = row.get("problem") or {}
        reason = row.get("reason") or problem.get("cause", "")
        brief = problem.get("kind") or reason.split(":")[0]
        return Verdict(f"{row['status']}: {reason}", f"{row['status']}: {brief}")
    res = row.get("resources") or {}
    occ = res.get("occupancy") or {}
    facts = []
    if res.get("spill_bytes"):
        spill = res["spill_bytes"]
        facts.append(model.Reason(f"spills {spill} B", f"spills {spill} bytes/thread"))
    # a GEMM tile's model weighs its blocks per SM itself (waves, loads in flight), so there
    # the bare figure is no reason
    if low_occupancy(row, best) and not (predicted and predicted.tiled):
        facts.append(
            model.Reason(
                f"occupancy {occ['percent']:g}%",
                f"occupancy capped at {occ['percent']:g}% by {occ['limiter']}",
            )
        )
    if row["status"] != TIMED or best is None:
        fits = f"{occ['percent']:g}% ({occ['limiter']})" if occ else "unknown for this arch"
        said = [_said(facts) if facts else f"fits: no spills, occupancy {fits}"]
        tags = [f.tag for f in facts]
        if predicted and predicted.ratio >= model.SLOWER:  # a static sweep, ranked by the model
            said.append(
                f"the model puts it at {predicted.ratio:.2f}x its fastest config: "
                + _said(predicted.reasons)
            )
            tags += [r.tag for r in predicted.reasons]
        return Verdict("; ".join(said), ", ".join(tags) or "fits")
    if row is best:
        return Verdict("best", "best")
    measured = timed_ms(row) / timed_ms(best)
    slower = f"{100.0 * (measured - 1.0):.0f}% slower"
    if within_noise(row, best):
        return Verdict(
            f"within noise of the best ({100.0 * (measured - 1.0):+.1f}%)", "within noise"
        )
    if row.get("stop") == "light":  # dropped by successive halving: few samples, no verdict
        return Verdict(
            f"{slower} in a {row['samples']}-sample timing: dropped by halving", "halved out"
        )
    modelled = predicted is not None and predicted.explains(measured)
    reasons = facts + list(predicted.reasons if predicted and modelled else ())
    if reasons:
        sized = f" (model {predicted.ratio:.2f}x)" if predicted and modelled else ""
        return Verdict(f"{slower}: {_said(reasons)}{sized}", ", ".join(r.tag for r in reasons))
    ratio = predicted.ratio if predicted else 1.0
    gap = measured / ratio
    said = _said(predicted.reasons) if predicted and ratio >= model.SLOWER else ""
    if ratio < 1 / model.SLOWER:
        text = f"{slower} where the model expects it {1 - ratio:.0%} faster"
    elif said and ratio < measured:
        text = (
            f"{slower}; the model accounts for {ratio - 1:.0%} ({said}), the other "
            f"{gap - 1:.0%} has no static reason"
        )
    elif said:
        text = f"{slower}; the model expects {ratio - 1:.0%} ({said}), more than this"
    else:
        text = f"{slower} with no static reason"
    return Verdict(f"{text}: profile it (profile --pin)", "profile it", gap)


def low_occupancy(row: SweepRow, best: SweepRow | None) -> bool:
    """Occupancy below the best config's, or under LOW_OCCUPANCY when there is none: a matmul
    that wins at 12.5% does not lose to its neighbour for having 12.5% too."""
    occ = (row.get("resources") or {}).get("occupancy") or {}
    best_occ = ((best or {}).get("resources") or {}).get("occupancy") or {}
    return bool(occ) and occ["percent"] < best_occ.get("percent", LOW_OCCUPANCY)


def _said(reasons: Iterable[model.Reason]) -> str:
    return "; ".join(r.text for r in reasons)


def minimal_set(rows: Iterable[SweepRow], near: float = NEAR_BEST) -> list[str]:
    """The fewest configs such that every shape has one within `near` of its best (exact search
    by set size; ties go to the set with the lowest summed time)."""
    shapes = {s: ranked(rs) for s, rs in by_shape(rows).items()}
    shapes = {s: rs for s, rs in shapes.items() if rs}
    if not shapes:
        return []
    covers: dict[str, set[str]] = {}
    times: dict[str, float] = {}
    for s, rs in shapes.items():
        for r in rs:
            times[r["label"]] = times.get(r["label"], 0.0) + timed_ms(r) / timed_ms(rs[0])
            if timed_ms(r) <= timed_ms(rs[0]) * (1.0 + near):
                covers.setdefault(r["label"], set()).add(s)
    # a config another covers as well at no more time is never needed: dropping it keeps the
    # search exact, and leaves a few candidates where many shapes gave hundreds
    labels = sorted(covers, key=lambda k: (-len(covers[k]), times[k], k))
    labels = [
        k
        for i, k in enumerate(labels)
        if not any(covers[k] <= covers[o] and times[o] <= times[k] for o in labels[:i])
    ]
    for size in range(1, len(shapes) + 1):
        fits = [
            combo
            for combo in itertools.combinations(labels, size)
            if set().union(*(covers[k] for k in combo)) == set(shapes)
        ]
        if fits:
            return list(min(fits, key=lambda c: sum(times[k] for k in c)))
    return []  # unreachable: each shape's best covers it


def buckets(rows: Iterable[SweepRow], near: float = NEAR_BEST) -> dict:
    """Which shapes can share an autotune key bucket (`buckets.key_buckets`), from the rows'
    times over each shape's best."""
    ratios = {}
    for rs in by_shape(rows).values():
        order = ranked(rs)
        if order:
            shape = tuple(order[0]["shape"])
            ratios[shape] = {r["label"]: timed_ms(r) / timed_ms(order[0]) for r in order}
    return key_buckets(ratios, near)


def summarize(result: SweepResult) -> SweepResult:
    """Fill each row's explanation, each shape's best and Triton's agreement, the minimal set and
    the counts; returns `result`."""
    shapes = {}
    device = model.device(result.gpu, result.dtype, result.device)
    for s, rows in by_shape(result.rows).items():
        order = ranked(rows)
        best = order[0] if order else None
        predicted = _predictions(
            rows,
            best,
            model.problem(result.problems.get(s), rows[0]["shape"], result.dtype),
            device,
        )
        gaps = {}
        for row in rows:
            model_says = predicted.get(row["label"])
            said = verdict(row, best, model_says)
            row["why"], row["brief"] = said.why, said.brief
            row["model"] = round(model_says.ratio, 3) if model_says else None
            if said.gap is not None:
                gaps[row["label"]] = said.gap
        triton = result.triton.get(s)
        shapes[s] = {
            "best": best["label"] if best else None,
            "best_ms": best["ms"] if best else None,
            "ranked": [r["label"] for r in order],
            "triton": triton,
            "finding": _disagreement(triton, best, rows),
            "profile": max(gaps, key=lambda k: gaps[k]) if gaps else None,
        }
    result.shapes = shapes
    chosen = minimal_set(result.rows)
    values = {r["label"]: r["values"] for r in result.rows}
    result.minimal_set = {"labels": chosen, "configs": [values[k] for k in chosen]}
    result.buckets = buckets(result.rows)
    status = [r["status"] for r in result.rows]
    result.summary = {
        "configs": len({r["label"] for r in result.rows}),
        "rows": len(status),
        **{s: status.count(s) for s in STATUSES if s in status or s != "skipped"},
        "best": {s: v["best"] for s, v in shapes.items()},
    }
    return result


def _predictions(
    rows: list[SweepRow], best: SweepRow | None, prob: model.Problem, device: model.Device
) -> dict[str, model.Prediction]:
    """Each compiled config's modelled time against the best's (the measured best, or in a
    static sweep the model's fastest), by label; none where the model has nothing to go on (no
    GEMM tile and no grid)."""
    compiled = [r for r in rows if r["status"] in (TIMED, "static")]
    estimates = {r["label"]: e for r in compiled if (e := model.estimate(r, prob, device))}
    if best is not None:
        base = estimates.get(best["label"])
    else:
        base = min(estimates.values(), key=lambda e: e.time, default=None)
    if base is None:
        return {}
    return {label: model.compare(est, base) for label, est in estimates.items()}


def _disagreement(triton: dict | None, best: SweepRow | None, rows: list[SweepRow]) -> str:
    if not triton or not best or not triton.get("label"):
        return ""
    pick = next((r for r in rows if r["label"] == triton["label"]), None)
    if pick is None:
        return f"Triton picked {triton['label']}, which this sweep did not try"
    if pick["status"] != TIMED:
        return f"Triton picked {pick['label']}, which this sweep recorded as {pick['status']}"
    if pick is best or within_noise(pick, best):
        return ""
    slower = 100.0 * (timed_ms(pick) / timed_ms(best) - 1.0)
    return (
        f"Triton's autotuner picked {pick['label']}, {slower:.0f}% slower than {best['label']} "
        "beyond noise: its own timing (or its pruning) misjudged this shape"
    )
