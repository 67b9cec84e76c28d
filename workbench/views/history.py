"""Stored runs of every kind as rows (when, what, how it ended, its verdict in a few words, how
long), newest first, and a kernel's bench times per case across runs: what `workbench history`
prints and the TUI's History tab shows, from the same functions. Reads the store; no UI."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.bench import history
from workbench.run.kinds import read_result
from workbench.run.store import RESULT_ERRORS, UNREADABLE, RunRecord, Store

if TYPE_CHECKING:
    from workbench.bench.result import BenchResult
    from workbench.check.result import CheckReport
    from workbench.diagnosis.facts import Diagnosis
    from workbench.ir.result import IrResult
    from workbench.sweep.result import SweepResult

RUN_HEADERS = ("run", "started", "kind", "kernel", "status", "mode", "time", "verdict")
KERNEL_RUN_HEADERS = tuple(h for h in RUN_HEADERS if h != "kernel")
"""The columns of one kernel's runs (`history NAME`, the History tab)."""
SHOWN = 30
"""Runs listed unless asked for more (`history --limit`): the newest."""
TREND_RUNS = 10_000
"""Bench runs read for a trend: all of them, in practice."""


def run_row(rec: RunRecord, kernel: bool = True) -> tuple[str, ...]:
    """One run as `RUN_HEADERS` cells; without `kernel`, as `KERNEL_RUN_HEADERS` cells."""
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.started))
    return (
        rec.id,
        started if rec.started else "-",
        kind_word(rec),
        *([rec.kernel] if kernel else []),
        rec.status,
        rec.mode,
        f"{rec.seconds:.1f}s" if rec.seconds is not None else "-",
        verdict(rec),  # last: the one cell of any length
    )


def kind_word(rec: RunRecord) -> str:
    """The command that made the run: `resources` runs the ir job with a launch cross-check."""
    if rec.kind == "ir" and (rec.params or {}).get("cross_check"):
        return "resources"
    return rec.kind


def verdict(rec: RunRecord) -> str:
    """What the run found, in a few words; "unreadable" for a record that does not read back as
    its kind's result; for a run that ended without one, the kind of its problem."""
    if rec.status == UNREADABLE:
        return UNREADABLE
    said = ""
    try:
        if rec.kind in TYPED and rec.result is not None:
            said = TYPED[rec.kind](read_result(rec.kind, rec.result))
        elif rec.kind in RECORDED and (rec.result or rec.summary):
            said = RECORDED[rec.kind](rec)
    except RESULT_ERRORS:
        return UNREADABLE
    if not said and rec.problem:
        return str(rec.problem.get("kind", ""))
    return said


def _check(result: CheckReport) -> str:
    found = result.summary()["verdict"]
    if not result.correct:
        return f"NOT correct: {found}"
    return "correct" if found == "correct" else f"correct; derived inputs: {found}"


def _bench(result: BenchResult) -> str:
    s = result.summary()
    said = f"{s['ok']} of {s['cases']} timed"
    return said + "".join(f", {s[k]} {k}" for k in ("failed", "errors") if s[k])


def _ir(result: IrResult) -> str:
    s = result.summary()
    said = f"{s['variants'] - s['errors']} of {s['variants']} compiled for {result.arch}"
    return said + (f", {s['spilling']} spill" if s["spilling"] else "")


def _sweep(result: SweepResult) -> str:
    s = result.summary
    kinds = ("ok", "static", "pruned", "wrong", "failed", "timeout")
    counts = ", ".join(f"{s[k]} {k}" for k in kinds if s.get(k))
    return f"{s['configs']} config(s)" + (f": {counts}" if counts else "")


def _diagnose(result: Diagnosis) -> str:
    loud = [f for f in result.findings if f.severity != "info"]
    return f"first {loud[0].id}, {len(loud)} above info" if loud else "nothing above info"


def _trial(rec: RunRecord) -> str:
    r = rec.result or {}
    speedup = r.get("speedup")
    if r["kept"]["label"] != r["before"]["label"]:
        return f"fix kept: {speedup:.2f}x faster"
    return "fix not kept: " + ("no correct candidate" if speedup is None else f"{speedup:.2f}x")


def _cache(rec: RunRecord) -> str:
    s = rec.summary or (rec.result or {}).get("summary") or {}
    said = f"{s.get('compile_dirs', 0)} compiled, {s.get('autotune', 0)} tuned"
    return said + (f", {s['dead']} stale" if s.get("dead") else "")


def _profile(rec: RunRecord) -> str:
    s = rec.summary or (rec.result or {}).get("summary") or {}
    if "launches" in s:
        return f"{s['launches']} launch(es), {s.get('findings', 0)} finding(s)"
    return f"{s.get('ranges', 0)} range(s) profiled"


TYPED: dict[str, Callable[[Any], str]] = {
    "check": _check,
    "bench": _bench,
    "ir": _ir,
    "sweep": _sweep,
    "diagnose": _diagnose,
}
"""Kinds whose result reads back typed (one that does not is unreadable): their verdict."""
RECORDED: dict[str, Callable[[RunRecord], str]] = {
    "diagnose-try": _trial,
    "cache": _cache,
    "profile-target": _profile,
    "profile-import": _profile,
}
"""Kinds kept as the dicts their commands print: their verdict, from the record."""


@dataclass
class KernelHistory:
    """A kernel's stored runs, newest first, and its bench times per case across runs."""

    kernel: str
    runs: list[RunRecord]
    more: bool
    """Older runs than these are stored (`history NAME --limit N` lists them)."""
    trends: list[history.Trend] = field(default_factory=list)

    @property
    def regressions(self) -> list[history.Regression]:
        return [t.regression for t in self.trends if t.regression]

    def summary(self) -> str:
        """How many runs of which kinds are listed."""
        kinds: dict[str, int] = {}
        for r in self.runs:
            kinds[kind_word(r)] = kinds.get(kind_word(r), 0) + 1
        shown = f"the newest {len(self.runs)}" if self.more else f"{len(self.runs)}"
        counts = ", ".join(f"{n} {k}" for k, n in kinds.items())
        return f"{shown} run(s) of {self.kernel}, newest first: {counts}"

    def lines(self) -> list[str]:
        """The summary, then the bench runs' cases and their regressions."""
        lines = [self.summary()]
        if self.trends:
            bench_runs = len({p.run_id for t in self.trends for p in t.points})
            lines.append(
                f"{bench_runs} bench run(s), {len(self.trends)} case(s): "
                f"{len(self.regressions)} regression(s) beyond the noise"
            )
        return lines + [f"regression: {r.text}" for r in self.regressions]


def kernel_history(
    store: Store, kernel: str, kinds: tuple[str, ...] | None = None, limit: int = SHOWN
) -> KernelHistory:
    """`kernel`'s newest `limit` runs (of `kinds`, else all), and its bench trends when bench
    runs are among those asked for."""
    found = store.history(kernel, kinds, limit + 1)
    trends = []
    if kinds is None or "bench" in kinds:
        trends = history.trend(history.points(store.history(kernel, "bench", TREND_RUNS)))
    return KernelHistory(kernel, found[:limit], len(found) > limit, trends)
