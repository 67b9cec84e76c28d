"""Every kind of run and every command, in one place: what a child process runs for a kind
(`entry`), the parameters it takes, the result it returns and the store keeps; and for each
command a person starts (the CLI's command, the TUI's action) the kinds of run it leaves and
the tabs its result fills.

A kind's job and result are named as "module:attribute" and imported only when that kind runs
or its result is read: the UI process never imports a job, and a test checks every name here
resolves. Pure: no torch, no triton.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.run.params import (
    BenchParams,
    CacheParams,
    CheckParams,
    IrParams,
    Params,
    ProfileParams,
    SweepParams,
)
from workbench.runtime.errors import Problem


@dataclass(frozen=True)
class Kind:
    """A kind of run, as the store records it."""

    name: str
    result: str | None
    """"module:Class" its result reads back as (`Class.from_dict`); None: kept as JSON."""
    entry: str | None = None
    """"module:function" a child process runs (`run.worker`); None: run in the caller's
    process (a diagnosis gathers by running other kinds)."""
    params: type[Params] | None = None


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("check", "workbench.check.result:CheckReport", "workbench.check.job:job", CheckParams),
        Kind("ir", "workbench.ir.result:IrResult", "workbench.diagnosis.ir_job:job", IrParams),
        Kind("bench", "workbench.bench.result:BenchResult", "workbench.bench.job:job", BenchParams),
        Kind("sweep", "workbench.sweep.result:SweepResult", "workbench.sweep.job:job", SweepParams),
        Kind("sweep-worker", None, "workbench.sweep.job:worker", SweepParams),  # its timings
        Kind(
            "profile-target",
            "workbench.profilers.result:TargetResult",
            "workbench.profilers.target:job",
            ProfileParams,
        ),
        Kind("profile-import", None),  # an ncu or nsys report read in (profile.json)
        Kind("cache", "workbench.cache.result:CacheReach", "workbench.cache.job:job", CacheParams),
        Kind("diagnose", "workbench.diagnosis.facts:Diagnosis"),
        Kind("diagnose-try", None),  # `loop.trial.Trial.to_dict()`
    )
}
JOBS = tuple(k.name for k in KINDS.values() if k.entry)
"""The kinds a child process runs: `python -m workbench.run.worker KIND`."""


@dataclass(frozen=True)
class Command:
    """What a person starts: the CLI's command and the TUI's action of the same name."""

    name: str
    title: str
    unit: str
    """What its progress counts: cases, configs, steps."""
    tabs: tuple[str, ...]
    """The tabs its result fills; the first shows it when it starts, and its key starts it."""
    shows: tuple[str, ...]
    """The kinds of run whose result its tab and its report part show from the store (none: the
    tab shows what it reads live, as the cache's)."""
    also: tuple[str, ...] = ()
    """Its other runs, kept in the history beside those."""
    gpu_only: bool = False

    @property
    def runs(self) -> tuple[str, ...]:
        """Every kind of run it leaves in the store (`history --kind`)."""
        return self.shows + self.also


PROFILE_KINDS = ("profile-target", "profile-import")
"""Kinds whose run folder holds a profile.json: a profile run's child, an imported report."""
COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("check", "check against the reference", "cases", ("check",), ("check",)),
        Command("bench", "benchmark (GPU)", "cases", ("bench",), ("bench",), gpu_only=True),
        Command("resources", "resources per config", "configs", ("resources",), ("ir",)),
        Command("ir", "IR at every stage", "configs", ("ir", "resources"), ("ir",)),
        Command("sweep", "sweep the autotune configs", "configs", ("sweep",), ("sweep",)),
        Command(
            "profile", "profile under ncu (GPU)", "steps", ("profile",), PROFILE_KINDS, (), True
        ),
        Command("cache", "read Triton's caches", "steps", ("cache",), (), ("cache",)),
        Command(
            "diagnose",
            "diagnose: every fact, ranked",
            "steps",
            ("diagnosis",),
            ("diagnose",),
            ("diagnose-try",),
        ),
    )
}
"""In the order the app lists them."""


def for_tab(tab: str) -> Command | None:
    """The command a tab's key starts (the one whose result the tab shows first); None for a
    tab that only reads the store (history)."""
    return next((c for c in COMMANDS.values() if c.tabs[0] == tab), None)


def resolve(name: str) -> Any:
    """The attribute a "module:attribute" name declares, imported now."""
    module, attr = name.split(":")
    return getattr(importlib.import_module(module), attr)


def job_params(kind: str, data: Mapping[str, Any]) -> Params:
    """A job's parameters, as its child reads them from the command line."""
    params = KINDS[kind].params
    if params is None:
        raise ValueError(f"{kind} is not run by a child process")
    return params.read(kind, data)


def read_result(kind: str, data: Any) -> Any:
    """A run's stored or returned result as its kind's type (the JSON itself for a kind kept as
    JSON); one of another shape raises one of `store.RESULT_ERRORS`."""
    name = KINDS[kind].result
    if name is None or data is None:
        return data
    if not isinstance(data, dict):
        raise TypeError(f"a {type(data).__name__}, not an object")
    return resolve(name).from_dict(data)


def wrong_result(kind: str, data: Any, exc: Exception) -> Problem:
    """Why a job's result, as it crossed from its child, is not its kind's (`read_result`
    raised `exc`): the job ends as an error with this problem, the JSON kept in its detail."""
    name = (KINDS[kind].result or "").partition(":")[2]
    return Problem(
        "wrong-result",
        f"the {kind} job returned a result that does not read as {name} "
        f"({type(exc).__name__}: {exc})",
        "a fault of the workbench (the job and its reader disagree): report it with the detail",
        detail=json.dumps(data, default=str)[:4000],
        source="tool",
    )
