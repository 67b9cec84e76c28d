"""A command's end as the app shows it, one `Finished`: the typed result, every problem in the
order the CLI prints them, and the closing lines, from a run of this session (`app.actions`) or
from the store (`views.stored`). Pure of any UI."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from workbench.catalog.discovery import KernelEntry
from workbench.run import kinds
from workbench.runtime.errors import Problem

if TYPE_CHECKING:
    from workbench.bench.result import BenchResult
    from workbench.check.result import CheckReport
    from workbench.diagnosis.facts import Diagnosis
    from workbench.ir.result import IrResult
    from workbench.run.jobs import Outcome
    from workbench.sweep.result import SweepResult
    from workbench.views.history import KernelHistory

Result: TypeAlias = (
    "CheckReport | IrResult | BenchResult | SweepResult | Diagnosis | KernelHistory | dict | None"
)
"""What a Finished holds, by its command (`run.kinds.read_result`): a cache report and an ncu
summary stay the dicts `cache --json` prints and profile.json holds."""


@dataclass
class Finished:
    """One action's end, as the TUI shows it where its result goes."""

    action: str
    kernel: str
    status: str
    """ok | error | timeout | crash | cancelled | refused (stopped before any job started)."""
    result: Result = None
    problems: list[tuple[str, Problem]] = field(default_factory=list)
    """(prefix, problem) as the CLI prints them: "error", "case error", "not saved", a config."""
    lines: list[str] = field(default_factory=list)
    """The verdict first, then the closing lines (run id, time, artifacts)."""
    run_id: str | None = None
    started: float = 0.0
    """Epoch seconds when it began: what the source file's age is compared with."""
    seconds: float = 0.0
    file: str | None = None
    """The kernel file that ran (a stored run may come from another file of the same name)."""
    stored: bool = False
    """Read back from the store rather than run in this session."""

    @property
    def outcome(self) -> str:
        """The job's status, or what it found when it ran to the end: a check (or a bench's
        check) can end `ok` with the kernel wrong."""
        return (
            "NOT CORRECT"
            if self.status == "ok" and getattr(self.result, "correct", None) is False
            else self.status
        )


def problem_text(prefix: str, problem: Problem) -> str:
    """A problem as the CLI prints it (`views.text.print_problem`): prefix (source): where: cause,
    then the remedy."""
    label = f"{prefix} ({problem.source})" if problem.source else prefix
    return f"{label}: {problem}"


def problem_of(data: dict) -> Problem:
    """A Problem from its dict, tolerating the short {cause, remedy} a cache report may hold."""
    known = {k: data[k] for k in Problem.__dataclass_fields__ if k in data}
    return Problem(**{"kind": "problem", "cause": "", "remedy": "", **known})


def refused(action: str, entry: KernelEntry, problem: Problem, started: float) -> Finished:
    return Finished(action, entry.name, "refused", problems=[("error", problem)], started=started)


def crashed(action: str, entry: KernelEntry, exc: BaseException, started: float) -> Finished:
    """A fault of the workbench itself while running the action: shown, never swallowed."""
    problem = Problem(
        "workbench-fault",
        f"{type(exc).__name__}: {exc}",
        "a fault of the workbench: run the CLI twin of this action to see it again, and report it "
        "with the detail below",
        detail=traceback.format_exc(),
        source="tool",
    )
    return Finished(action, entry.name, "error", problems=[("error", problem)], started=started)


# ---- outcomes as Finished ----------------------------------------------------------------------


def result_problems(kind: str, result: Any) -> list[tuple[str, Problem]]:
    """The problems inside a result, as the CLI prints them after the table: each distinct case
    error of a check once, each config that did not compile (named by its label)."""
    if result is None:
        return []
    if kind == "check":
        found = {
            (c.problem["cause"], c.problem.get("file"), c.problem.get("line")): c.problem
            for c in result.cases
            if c.problem
        }
        return [("case error", problem_of(p)) for p in found.values()]
    if kind == "ir":
        return [(f"error [{v.label}]", problem_of(v.error)) for v in result.variants if v.error]
    return []


def verdict_lines(kind: str, result: Any) -> list[str]:
    """The verdict a result opens with, worded as its command words it."""
    if result is None:
        return []
    if kind == "check":
        from workbench.views.rows import check_verdict

        return [check_verdict(result)]
    if kind == "ir":
        s = result.summary()
        ok = s["variants"] - s["errors"]
        line = f"{result.kernel}: {ok} of {s['variants']} config(s) compiled for {result.arch}"
        line += f" ({result.mode})"
        if s["errors"]:
            line += f"; {s['errors']} did not compile"
        if s["spilling"]:
            line += f"; {s['spilling']} spill"
        return [line]
    if kind == "bench":
        s = result.summary()
        return [
            f"{result.kernel} on {result.device}: {s['ok']} of {s['cases']} case(s) timed"
            + (f", {s['failed']} failed" if s["failed"] else "")
            + (f", {s['errors']} error(s)" if s["errors"] else "")
        ]
    if kind == "sweep":
        return sweep_lines(result)
    if kind == "diagnose":
        from workbench.views.diagnosis import roofline_text, summary_line

        return [summary_line(result), roofline_text(result.roofline)]
    return []


def sweep_lines(result: SweepResult) -> list[str]:
    from workbench.sweep import analysis

    summary = result.summary
    counts = ", ".join(f"{summary[k]} {k}" for k in analysis.STATUSES if summary.get(k))
    head = (
        f"sweep {result.kernel}: {summary['configs']} config(s) x {len(result.shapes)} "
        f"shape(s) ({counts}), {result.mode}"
    )
    return [head] + [f"best {s}: {b}" for s, b in summary["best"].items() if b]


def from_outcome(kind: str, outcome: Outcome) -> Finished:
    """A finished child job (a `jobs.Outcome`) as the app shows it."""
    from workbench.views.text import run_footer

    result = kinds.read_result(kind, outcome.result)
    problems = [("error", outcome.problem)] if outcome.problem else []
    problems += result_problems(kind, result)
    if outcome.store_problem:
        problems.append(("not saved", outcome.store_problem))
    where = (outcome.result or {}).get("out_dir") or outcome.run_dir
    return Finished(
        kind,
        outcome.job.kernel.name if outcome.job.kernel else "-",
        outcome.status,
        result=result,
        problems=problems,
        lines=verdict_lines(kind, result) + [run_footer(outcome.run_id, outcome.seconds, where)],
        run_id=outcome.run_id,
        started=time.time() - outcome.seconds,
        seconds=outcome.seconds,
        file=outcome.job.kernel.file if outcome.job.kernel else None,
    )
