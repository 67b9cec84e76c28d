"""A sweep's rows read back (pure): pruning, ranking, one-line explanations of every loser,
agreement with Triton's own pick, and the smallest config set that stays near each shape's
best."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from workbench.runtime.grammar import shape_text

if TYPE_CHECKING:  # the result module reads its rows back through this one
    from workbench.sweep.result import SweepResult

RESULT_FILE = "sweep.json"
"""A sweep's rows as they land, in its run folder (what --resume reads)."""

Row = dict
NEAR_BEST = 0.05
"""The minimal set keeps every shape within 5 % of its best config."""
NOISE = 0.02
"""Two timings closer than 2 % (or than their p20-p80 spreads) are not told apart."""
LOW_OCCUPANCY = 25.0
TIMED = "ok"
FAILED = ("failed", "wrong", "timeout")


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


def within_noise(a: Row, b: Row) -> bool:
    spread = ((a["p80"] - a["p20"]) + (b["p80"] - b["p20"])) / 2
    return abs(a["ms"] - b["ms"]) <= max(NOISE * min(a["ms"], b["ms"]), spread)


def by_shape(rows: Iterable[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for row in rows:
        out.setdefault(shape_text(row["shape"]), []).append(row)
    return out


def ranked(rows: Iterable[Row]) -> list[Row]:
    """Timed, correct rows, fastest first."""
    return sorted((r for r in rows if r["status"] == TIMED), key=lambda r: r["ms"])


def explain(row: Row, best: Row | None) -> str:
    """One line: why this config failed, was pruned, or loses to `best`."""
    if row["status"] in FAILED or row["status"] == "pruned":
        problem = row.get("problem") or {}
        reason = row.get("reason") or problem.get("cause", "")
        return f"{row['status']}: {reason}"
    res = row.get("resources") or {}
    occ = res.get("occupancy") or {}
    facts = []
    if res.get("spill_bytes"):
        facts.append(f"spills {res['spill_bytes']} bytes/thread")
    best_occ = ((best or {}).get("resources") or {}).get("occupancy") or {}
    # below the winner's occupancy, or low when there is no winner: a matmul that wins at 12.5%
    # does not lose to its neighbour for having 12.5% too
    if occ and occ["percent"] < best_occ.get("percent", LOW_OCCUPANCY):
        facts.append(f"occupancy capped at {occ['percent']:g}% by {occ['limiter']}")
    if row["status"] != TIMED or best is None:
        return "; ".join(facts) or "fits: no spills, occupancy " + (
            f"{occ['percent']:g}% ({occ['limiter']})" if occ else "unknown for this arch"
        )
    if row is best:
        return "best"
    slower = 100.0 * (row["ms"] / best["ms"] - 1.0)
    if within_noise(row, best):
        return f"within noise of the best ({slower:+.1f}%)"
    if facts:
        return f"{slower:.0f}% slower: " + "; ".join(facts)
    return f"{slower:.0f}% slower with no static reason: profile it (profile --pin)"


def minimal_set(rows: Iterable[Row], near: float = NEAR_BEST) -> list[str]:
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
            times[r["label"]] = times.get(r["label"], 0.0) + r["ms"] / rs[0]["ms"]
            if r["ms"] <= rs[0]["ms"] * (1.0 + near):
                covers.setdefault(r["label"], set()).add(s)
    labels = sorted(covers, key=lambda k: (-len(covers[k]), times[k]))
    for size in range(1, len(shapes) + 1):
        fits = [
            combo
            for combo in itertools.combinations(labels, size)
            if set().union(*(covers[k] for k in combo)) == set(shapes)
        ]
        if fits:
            return list(min(fits, key=lambda c: sum(times[k] for k in c)))
    return []  # unreachable: each shape's best covers it


def summarize(result: SweepResult) -> SweepResult:
    """Fill each row's explanation, each shape's best and Triton's agreement, the minimal set and
    the counts; returns `result`."""
    shapes = {}
    for s, rows in by_shape(result.rows).items():
        order = ranked(rows)
        best = order[0] if order else None
        for row in rows:
            row["why"] = explain(row, best)
        triton = result.triton.get(s)
        shapes[s] = {
            "best": best["label"] if best else None,
            "best_ms": best["ms"] if best else None,
            "ranked": [r["label"] for r in order],
            "triton": triton,
            "finding": _disagreement(triton, best, rows),
        }
    result.shapes = shapes
    chosen = minimal_set(result.rows)
    values = {r["label"]: r["values"] for r in result.rows}
    result.minimal_set = {"labels": chosen, "configs": [values[k] for k in chosen]}
    status = [r["status"] for r in result.rows]
    result.summary = {
        "configs": len({r["label"] for r in result.rows}),
        "rows": len(status),
        **{s: status.count(s) for s in ("ok", "static", "pruned", "wrong", "failed", "timeout")},
        "best": {s: v["best"] for s, v in shapes.items()},
    }
    return result


def _disagreement(triton: dict | None, best: Row | None, rows: list[Row]) -> str:
    if not triton or not best or not triton.get("label"):
        return ""
    pick = next((r for r in rows if r["label"] == triton["label"]), None)
    if pick is None:
        return f"Triton picked {triton['label']}, which this sweep did not try"
    if pick["status"] != TIMED:
        return f"Triton picked {pick['label']}, which this sweep recorded as {pick['status']}"
    if pick is best or within_noise(pick, best):
        return ""
    slower = 100.0 * (pick["ms"] / best["ms"] - 1.0)
    return (
        f"Triton's autotuner picked {pick['label']}, {slower:.0f}% slower than {best['label']} "
        "beyond noise: its own timing (or its pruning) misjudged this shape"
    )
