"""Replay (pure): search strategies run against a recorded exhaustive sweep with no GPU, as Kernel
Tuner's simulation mode does; each timing is answered from the recorded rows.

A full timing is the recorded row as it is. A light timing of k samples (successive halving's
first rounds) is the median of k draws around the recorded median, spread as the row's p20-p80
says (a normal distribution: p80 - p20 spans 1.683 sigma), or the recorded median itself where
the rows have no quantiles. Seconds are the row's recorded check and timing seconds, a light
timing's scaled by its calls; a config's check counts once per search, as in a live sweep.

Over seeds, per shape: how many timings each strategy needs before its pick (the fastest by its
own latest timing) comes within NEAR of the exhaustive best, and whether it gets there within a
quarter of the space.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from random import Random

from workbench.runtime.errors import fail
from workbench.sweep import analysis, strategy
from workbench.sweep.result import SweepResult
from workbench.sweep.row import SweepRow, timed_ms
from workbench.sweep.space import Values, key
from workbench.sweep.strategy import Budget, Evaluate, Space, Trace

NEAR = 0.02
"""A pick within 2 % of the exhaustive best has found it."""
SHARE = strategy.DEFAULT_SHARE
"""The share of the space a strategy should need at most: the default budget of a live one."""
SIGMA_SPAN = 1.683
"""p80 - p20 of a normal distribution, in sigmas."""
UNTIMED = ("static", "skipped")
"""Statuses of configs a sweep compiled but did not time: no replay can answer for them."""


@dataclass
class Recorded:
    """One shape of an exhaustive sweep: the configs a strategy can time there (compiled, not
    pruned), in the recorded order, and the best of them."""

    shape: str
    rows: list[SweepRow]
    best: SweepRow
    triton: str | None
    """Triton's pick, as recorded."""
    own: bool
    """The space is the kernel's own configs: coordinate descent does not start from Triton's
    pick there (`strategy.starts_from_triton`), as in a live sweep."""

    def start(self) -> tuple[str, str]:
        """Where coordinate descent starts, and why."""
        return strategy.static_start(self.rows, None if self.own else self.triton)

    @cached_property
    def space(self) -> Space:
        """One Space for every search here: its neighbours are worked out once."""
        return Space([r["values"] for r in self.rows])

    @property
    def spread(self) -> bool:
        """Every timed row has its p20-p80 spread (else light timings replay exactly)."""
        return all(r.get("p20") is not None for r in self.rows if r["status"] == analysis.TIMED)

    @property
    def seconds(self) -> bool:
        """Every row has its check and timing seconds (sweeps record them from this version)."""
        return all(r.get("timing_s") is not None for r in self.rows)


def read(data: object, name: str) -> SweepResult:
    """A sweep read from `data` (a sweep.json, a job's result, or `sweep --json`'s output)."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise fail(
            "bad-replay",
            f"{name} is not a sweep (no rows)",
            "give a sweep.json from a run folder, or the output of `sweep ... --json`",
            file=name,
            source="usage",
        )
    try:
        return SweepResult.from_dict(data)
    except (TypeError, KeyError, ValueError) as exc:
        raise fail(
            "bad-replay",
            f"{name} does not read as a sweep: {exc}",
            "give a sweep.json as the sweep wrote it",
            file=name,
            source="usage",
        ) from exc


def recorded(result: SweepResult, name: str) -> list[Recorded]:
    """The shapes of an exhaustive GPU sweep; a sweep that did not time every config is refused."""
    if result.mode != "gpu":
        raise fail(
            "not-timed",
            f"{name} is a {result.mode} sweep: it holds no timings to replay",
            "record one on a GPU host: `sweep NAME --space ...` times every config",
            source="usage",
        )
    untimed = [r["label"] for r in result.rows if r["status"] in UNTIMED]
    if result.strategy or untimed:
        chose = (result.strategy or {}).get("name", "a strategy")
        raise fail(
            "not-exhaustive",
            f"{name} did not time every config ({chose}; {len(untimed)} untimed): a replay "
            "needs each config's time",
            "record the sweep with --strategy exhaustive (the default)",
            source="usage",
        )
    out = []
    for shape, rows in analysis.by_shape(result.rows).items():
        space = [r for r in rows if r.get("resources") and r["status"] != "pruned"]
        order = analysis.ranked(space)
        if order:
            pick = (result.triton.get(shape) or {}).get("label")
            own = not strategy.starts_from_triton(result.space)
            out.append(Recorded(shape, space, order[0], pick, own))
    return out


def evaluator(rec: Recorded, seed: int) -> Evaluate:
    """Timings answered from the recorded rows (light ones drawn with `seed`)."""
    rows = {r["label"]: r for r in rec.rows}
    checked: set[str] = set()

    def evaluate(values: Values, samples: int | None) -> SweepRow:
        row = rows[key(values)]
        first = row["label"] not in checked
        checked.add(row["label"])
        out: SweepRow = {**row, "check_s": row.get("check_s") if first else 0.0}
        if samples is not None and row["status"] == analysis.TIMED:
            out["ms"] = _light(row, samples, seed)
            timing, calls = row.get("timing_s"), row.get("calls")
            if timing is not None and calls:
                out["timing_s"] = timing * (calls - row["samples"] + samples) / calls
        return out

    return evaluate


def _light(row: SweepRow, samples: int, seed: int) -> float:
    ms, p20, p80 = timed_ms(row), row["p20"], row["p80"]
    if p20 is None or p80 is None:
        return ms
    sigma = (p80 - p20) / SIGMA_SPAN
    draw = Random(f"{seed}/{row['label']}/{samples}")  # the same draws whatever the order
    return statistics.median(max(draw.gauss(ms, sigma), 0.0) for _ in range(samples))


def run(rec: Recorded, name: str, budget: Budget, seed: int) -> Trace:
    start = rec.start()[0] if name == "coordinate" else None
    return strategy.search(name, rec.space, evaluator(rec, seed), budget, seed, start)


def to_near(trace: Trace, rec: Recorded) -> int | None:
    """Timings until the trace's pick is within NEAR of the exhaustive best (by the recorded
    times, whatever the light timings said); None: never."""
    times = {r["label"]: timed_ms(r) for r in rec.rows if r["status"] == analysis.TIMED}
    limit = timed_ms(rec.best) * (1.0 + NEAR)
    return next((n for n, p in enumerate(trace.picks, 1) if p and times[p] <= limit), None)


def replay(
    result: SweepResult, name: str, strategies: Iterable[str], budget: Budget, seeds: int
) -> dict:
    """Per shape and strategy, over `seeds` seeds: timings (and seconds) to come within NEAR of
    the best, median and p90; how many seeds got there within SHARE of the space."""
    shapes = recorded(result, name)
    if budget.seconds is not None and not all(rec.seconds for rec in shapes):
        raise fail(
            "no-recorded-seconds",
            f"{name} has no per-config seconds (recorded before sweeps kept check_s and "
            "timing_s), so a time budget cannot be replayed",
            "give the budget as a count of timings (--budget 40), or record the sweep again",
            source="usage",
        )
    out = []
    for rec in shapes:
        runs = []
        for s in strategies:
            traces = [run(rec, s, budget, seed) for seed in range(seeds)]
            runs.append(_stats(rec, s, traces))
        out.append(
            {
                "shape": rec.shape,
                "configs": len(rec.rows),
                "best": rec.best["label"],
                "best_ms": rec.best["ms"],
                "triton": rec.triton,
                "strategies": runs,
            }
        )
    notes = []
    if not all(rec.spread for rec in shapes):
        notes.append("some rows have no p20-p80 spread: their light timings replay exactly")
    if not all(rec.seconds for rec in shapes):
        notes.append("the sweep recorded no per-config seconds: timings are counted, not timed")
    if not result.complete:
        notes.append("the sweep did not finish: its recorded configs are the space")
    return {
        "kernel": result.kernel,
        "gpu": result.gpu,
        "dtype": result.dtype,
        "triton_version": result.triton_version,
        "seeds": seeds,
        "budget": {**budget.to_dict(), "text": budget.text()},
        "near": NEAR,
        "share": SHARE,
        "shapes": out,
        "notes": notes,
    }


def _stats(rec: Recorded, name: str, traces: list[Trace]) -> dict:
    needed = [to_near(t, rec) for t in traces]
    seconds = [
        None if n is None or t.seconds is None else sum(e["seconds"] for e in t.evaluations[:n])
        for t, n in zip(traces, needed)
    ]
    share = math.ceil(SHARE * len(rec.rows))
    times = {r["label"]: timed_ms(r) for r in rec.rows}
    final = [times[t.pick] / timed_ms(rec.best) if t.pick else None for t in traces]
    within = sum(n is not None and n <= share for n in needed)
    median = _rank(needed, 0.5)
    start = rec.start() if name == "coordinate" else None
    return {
        "strategy": name,
        "start": {"label": start[0], "from": start[1]} if start else None,
        "to_near": {"median": median, "p90": _rank(needed, 0.9), "per_seed": needed},
        "seconds_to_near": {"median": _rank(seconds, 0.5), "p90": _rank(seconds, 0.9)}
        if all(t.seconds is not None for t in traces)
        else None,
        "reached": sum(n is not None for n in needed),
        "within_share": {
            "yes": median is not None and median <= share,
            "seeds": within,
            "of": len(traces),
            "share": share,
        },
        "spent": _rank([len(t.evaluations) for t in traces], 0.5),
        "final_vs_best": _rank(final, 0.5),
    }


def _rank(values: list, q: float) -> float | None:
    """The nearest-rank quantile, a None (never reached) counting as the largest value."""
    order = sorted(values, key=lambda v: (v is None, v or 0))
    return order[max(0, math.ceil(q * len(order)) - 1)] if order else None
