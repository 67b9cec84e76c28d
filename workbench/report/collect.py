"""What the store holds for one kernel, read back typed: the newest readable result of each kind,
the newer runs that left none (failed, timed out), and the stored results that cannot be read
(each a Problem with its cause and remedy; the report goes on without them)."""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from workbench.bench.result import BenchResult
from workbench.catalog.discovery import search_roots
from workbench.check.result import CheckReport
from workbench.diagnosis import diagnose_profile
from workbench.diagnosis.facts import Diagnosis
from workbench.ir.result import IrResult
from workbench.run.store import RESULT_ERRORS, RunRecord, Store, unreadable_result
from workbench.runtime.errors import Problem
from workbench.sweep import analysis
from workbench.sweep.result import SweepResult

T = TypeVar("T")
RUNS = 10_000
"""Runs read per kind: all of them, in practice (the trend wants every bench run)."""


class Absent(Exception):
    """A run that holds no result of this kind (a profile run without an ncu report): skipped,
    neither shown nor reported."""


@dataclass
class Found(Generic[T]):
    run: RunRecord | None = None
    value: T | None = None
    failed: list[RunRecord] = field(default_factory=list)
    """Runs newer than `run` that ended without a result."""
    problems: list[Problem] = field(default_factory=list)


@dataclass
class Kernel:
    """One kernel's runs, as the report reads them."""

    name: str
    store: Store
    file: str | None = None
    """The kernel's file as its runs recorded it."""

    def command(self, action: str, options: str = "") -> str:
        """The command that fills a part: `python -m workbench ACTION NAME OPTIONS`, with --path
        when the kernel's file is not in the default kernel folder."""
        cmd = f"python -m workbench {action} {shlex.quote(self.name)}{options}"
        if self.file and not any(_within(self.file, root) for root in search_roots(())):
            cmd += f" --path {shlex.quote(_relative(self.file))}"
        return cmd

    def runs(self, kinds: tuple[str, ...]) -> tuple[list[RunRecord], Problem | None]:
        """Newest first, without the rows the store could not decode: those are one problem."""
        runs = self.store.history(self.name, kinds, RUNS)
        damaged = [r for r in runs if (r.problem or {}).get("kind") == "corrupt-record"]
        if not damaged:
            return runs, None
        return [r for r in runs if r not in damaged], Problem(
            "corrupt-store-row",
            f"{len(damaged)} of the store's {'/'.join(kinds)} runs of {self.name} cannot be "
            f"decoded: {(damaged[0].problem or {}).get('cause')}",
            f"remove the damaged row from {self.store.path} (sqlite3), or point "
            "WORKBENCH_REPORTS at another store",
            file=str(self.store.path),
            source="environment",
        )

    def newest(
        self, kinds: tuple[str, ...], read: Callable[[RunRecord], T], action: str
    ) -> Found[T]:
        """The newest run whose result `read` can read, with the newer runs that left none and
        the newer results that could not be read."""
        runs, problem = self.runs(kinds)
        found: Found[T] = Found(problems=[problem] if problem else [])
        for run in runs:
            self.file = self.file or run.file
            try:
                value = read(run)
            except Absent:
                if run.status != "ok":
                    found.failed.append(run)
                continue
            except RESULT_ERRORS as exc:
                found.problems.append(self.unreadable(run, exc, action))
                continue
            found.run, found.value = run, value
            break
        return found

    def unreadable(self, run: RunRecord, exc: Exception, action: str) -> Problem:
        return unreadable_result(run, exc, f"run `{self.command(action)}`")


def _within(file: str, root: Path) -> bool:
    try:
        return Path(file).resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _relative(file: str) -> str:
    path = Path(file)
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else file


# ---- readers: a run -> its typed result (Absent when it holds none) -------------------------


def _result(run: RunRecord) -> dict:
    if not run.result:
        raise Absent
    return run.result


def read_check(run: RunRecord) -> CheckReport:
    return CheckReport.from_dict(_result(run))


def read_bench(run: RunRecord) -> BenchResult:
    return BenchResult.from_dict(_result(run))


def read_ir(run: RunRecord) -> IrResult:
    return IrResult.from_dict(_result(run))


def read_diagnosis(run: RunRecord) -> Diagnosis:
    return Diagnosis.from_dict(_result(run))


def read_trial(run: RunRecord) -> dict:
    """A `diagnose --try` run: `loop.trial.Trial.to_dict()`, both sides and the speed-up."""
    result = _result(run)
    for key in ("before", "fix_id", "finding"):
        if key not in result:
            raise KeyError(key)
    return result


def read_sweep(run: RunRecord) -> SweepResult:
    """The run's result, or the sweep file its folder kept (a merged or an interrupted sweep),
    explained again (`sweep.analysis.summarize`): every loser with today's reasons."""
    result = run.result
    if not result:
        folder = Path(run.artifacts or "")
        files = [folder / "sweep_merged.json", folder / analysis.RESULT_FILE]
        path = next((f for f in files if f.is_file()), None)
        if path is None:
            raise Absent
        result = json.loads(path.read_text())
    return SweepResult.from_dict(copy.deepcopy(result))


def read_profile(run: RunRecord) -> dict:
    """The ncu summary a profile run or an imported report left as profile.json, with its
    measured findings. Nsight Systems summaries and runs without a report are not profiles here."""
    path = Path(run.artifacts or "") / "profile.json"
    if not path.is_file():
        raise Absent
    summary = json.loads(path.read_text())
    if not isinstance(summary, dict):
        raise TypeError(f"profile.json holds a {type(summary).__name__}, not a summary")
    if summary.get("tool") != "ncu":
        raise Absent
    if not isinstance(summary.get("kernels"), list):
        raise KeyError("kernels")
    return diagnose_profile(summary)
