"""A kernel's bench times across runs, and the regressions among them (pure: no torch).

`points` turns stored bench runs into one point per timed case per run; `trend` groups them by
case, and `regressions` flags the cases whose newest time is worse than the median of their
earlier times by more than the measured noise. Only points of the same kernel, shape, dtype, GPU
model and Triton version are compared: another GPU or another compiler starts another baseline.

Noise is measured, from the points themselves, as the largest of:

- the runs' own spread: the mean of the newest run's p20-p80 width and the median p20-p80 width
  of the earlier runs (the rule the sweep uses to tell two timings apart);
- the run-to-run spread: 3 x the median absolute deviation of the earlier medians around their
  median (about two standard deviations of normal noise; one wild earlier run barely moves it);
- a floor of `timing.NOISE` (2 %) of the baseline, below which timings are not told apart.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import NamedTuple

from workbench.bench.result import BenchResult
from workbench.bench.timing_rules import NOISE
from workbench.run.store import RESULT_ERRORS, RunRecord
from workbench.runtime.grammar import shape_text

MAD_FACTOR = 3.0
"""Median absolute deviations in the run-to-run spread (~2 sigma)."""


class Case(NamedTuple):
    """What makes two points comparable."""

    kernel: str
    shape: tuple[int, ...]
    dtype: str
    gpu: str
    triton: str

    @property
    def text(self) -> str:
        where = f"on {self.gpu}, Triton {self.triton}"
        return f"{self.kernel} {shape_text(self.shape)} {self.dtype} {where}"


@dataclass(frozen=True)
class HistoryPoint:
    """One bench case of one run."""

    run_id: str
    time: float
    """When the run started, seconds since the epoch."""
    kernel: str
    shape: tuple[int, ...]
    dtype: str
    ms: float
    """Median time."""
    p20: float | None
    p80: float | None
    gpu: str
    triton: str

    @property
    def case(self) -> Case:
        return Case(self.kernel, self.shape, self.dtype, self.gpu, self.triton)

    @property
    def spread(self) -> float:
        """p80 - p20, or 0 where the run did not keep its quantiles."""
        return self.p80 - self.p20 if self.p20 is not None and self.p80 is not None else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "shape": list(self.shape)}


@dataclass(frozen=True)
class Regression:
    """A case whose newest time is worse than its earlier median beyond the noise."""

    kernel: str
    shape: tuple[int, ...]
    dtype: str
    gpu: str
    triton: str
    run_id: str
    """The newest run: the one that regressed."""
    ms: float
    baseline_ms: float
    """Median of the earlier runs' times."""
    noise_ms: float
    earlier: int
    """How many earlier runs the baseline is the median of."""

    @property
    def slowdown(self) -> float:
        return self.ms / self.baseline_ms

    @property
    def text(self) -> str:
        case = Case(self.kernel, self.shape, self.dtype, self.gpu, self.triton).text
        return (
            f"{case}: {self.ms:.4g} ms in run {self.run_id} against a median of "
            f"{self.baseline_ms:.4g} ms over {self.earlier} earlier run(s) "
            f"(+{self.slowdown - 1:.1%}, noise {self.noise_ms / self.baseline_ms:.1%})"
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "shape": list(self.shape), "slowdown": self.slowdown}


@dataclass(frozen=True)
class Trend:
    """One case's points, oldest first, and its newest point against the earlier ones."""

    case: Case
    points: list[HistoryPoint]
    baseline_ms: float | None
    """Median of the earlier times; None with a single point."""
    noise_ms: float | None
    regression: Regression | None

    @property
    def newest(self) -> HistoryPoint:
        return self.points[-1]

    @property
    def change(self) -> float | None:
        """Newest over baseline, minus one (+0.05: 5 % slower)."""
        return self.newest.ms / self.baseline_ms - 1 if self.baseline_ms else None

    @property
    def verdict(self) -> str:
        if self.baseline_ms is None or self.noise_ms is None:
            return "first run"
        if self.regression:
            return "REGRESSION"
        if self.newest.ms < self.baseline_ms - self.noise_ms:
            return "faster"
        return "within noise"

    def to_dict(self) -> dict:
        return {
            **self.case._asdict(),
            "shape": list(self.case.shape),
            "points": [p.to_dict() for p in self.points],
            "baseline_ms": self.baseline_ms,
            "noise_ms": self.noise_ms,
            "change": self.change,
            "verdict": self.verdict,
            "regression": self.regression.to_dict() if self.regression else None,
        }


TREND_HEADERS = (
    "case",
    "gpu",
    "triton",
    "runs",
    "ms, oldest to newest",
    "median before",
    "newest",
    "noise",
    "verdict",
)
TREND_SHOWN = 6
"""Times shown per case in a trend row: the newest few."""


def trend_row(t: Trend) -> tuple[str, ...]:
    """One case of a trend as table cells (`TREND_HEADERS`), for the CLI and the report."""
    times = [f"{p.ms:.4g}" for p in t.points[-TREND_SHOWN:]]
    older = "... " if len(t.points) > TREND_SHOWN else ""
    return (
        f"{t.case.kernel} {shape_text(t.case.shape)} {t.case.dtype}",
        t.case.gpu,
        t.case.triton,
        str(len(t.points)),
        older + " ".join(times),
        f"{t.baseline_ms:.4g}" if t.baseline_ms else "-",
        f"{t.change:+.1%}" if t.change is not None else "-",
        f"{t.noise_ms / t.baseline_ms:.1%}" if t.noise_ms and t.baseline_ms else "-",
        t.verdict,
    )


def points(records: Iterable[RunRecord]) -> list[HistoryPoint]:
    """One point per timed case of every bench run among `records`, oldest first. Runs of other
    kinds, runs without a result and results that cannot be read are left out (the report says
    which results are unreadable)."""
    out = []
    for run in records:
        if run.kind != "bench" or not run.result:
            continue
        try:
            out += _points_of(run)
        except RESULT_ERRORS:
            continue
    return sorted(out, key=lambda p: (p.time, p.run_id))


def _points_of(run: RunRecord) -> list[HistoryPoint]:
    """The timed cases of one bench run (one of RESULT_ERRORS when its result does not read)."""
    result = BenchResult.from_dict(run.result or {})
    return [
        HistoryPoint(
            run_id=run.id,
            time=run.started,
            kernel=rec.name,
            shape=tuple(rec.shape),
            dtype=rec.dtype,
            ms=float(rec.ms),
            p20=rec.ms_p20,
            p80=rec.ms_p80,
            gpu=rec.device or result.device,
            triton=result.ceilings.triton,
        )
        for rec in result.records
        if rec.status == "ok" and rec.ms is not None
    ]


def trend(pts: Iterable[HistoryPoint]) -> list[Trend]:
    """Every case's points and verdict, in the order cases first appear."""
    cases: dict[Case, list[HistoryPoint]] = {}
    for p in sorted(pts, key=lambda p: (p.time, p.run_id)):
        cases.setdefault(p.case, []).append(p)
    return [_compare(case, ps) for case, ps in cases.items()]


def regressions(pts: Iterable[HistoryPoint]) -> list[Regression]:
    """The cases whose newest time is worse than the median of their earlier times by more than
    the noise (module docstring), comparing like with like only."""
    return [t.regression for t in trend(pts) if t.regression]


def _compare(case: Case, ps: list[HistoryPoint]) -> Trend:
    *earlier, newest = ps
    if not earlier:
        return Trend(case, ps, None, None, None)
    times = [p.ms for p in earlier]
    base = statistics.median(times)
    own = (newest.spread + statistics.median(p.spread for p in earlier)) / 2
    between = MAD_FACTOR * statistics.median(abs(t - base) for t in times)
    noise = max(own, between, NOISE * base)
    found = None
    if newest.ms > base + noise:
        found = Regression(
            *case,
            run_id=newest.run_id,
            ms=newest.ms,
            baseline_ms=base,
            noise_ms=noise,
            earlier=len(earlier),
        )
    return Trend(case, ps, base, noise, found)
