"""The actions a person starts from the TUI, each what its CLI command does: a `Selection`
(dtype, shape set, config, arch) goes through the command's own parameter builder
(`app.params`), the command starts as the CLI starts it (`app.start`), and its outcome comes back
as one `Finished` (`views.finished`). Pure of any UI; runs in whatever thread calls it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from workbench.app import params as build
from workbench.app import start
from workbench.catalog.discovery import KernelEntry
from workbench.ir.linemap import STAGES
from workbench.ir.occupancy import parse_arch
from workbench.loop.gather import planned_steps
from workbench.run import machine
from workbench.run.params import BenchParams, CheckParams, IrParams, SweepParams
from workbench.runtime.errors import Problem, WorkbenchError
from workbench.runtime.grammar import parse_settings, shape_text
from workbench.views.cache import summary_line
from workbench.views.diagnosis import trial_text
from workbench.views.finished import (
    Finished,
    from_outcome,
    problem_of,
    refused,
    sweep_lines,
    verdict_lines,
)
from workbench.views.text import run_footer

OnEvent = Callable[[dict], None]
TIMEOUT = 900.0
"""Seconds per job, as the CLI's --timeout defaults."""


@dataclass(frozen=True)
class Selection:
    """What an action runs on, chosen in the app; None/"" is the command's own default."""

    dtype: str | None = None
    """check: every dtype the kernel declares; the others: its first."""
    shape_set: str | None = None
    """check: every set; ir, resources, profile: the first check shape; sweep and bench: theirs."""
    config: str = ""
    """K=V,... compiled alone by ir and resources, pinned by profile; "" = the kernel's own."""
    arch: str | None = None
    """sm_XX to compile for (ir, resources, sweep, cache); None = the GPU's, else sm_90."""
    space: str = "own"
    """The configs a sweep runs (`sweep --space`): own, auto or neighbours."""

    def describe(self) -> str:
        """The choices made, the defaults left unsaid: "options: dtype float16 · arch sm_80"."""
        chosen = [
            f"{what} {value}"
            for what, value in (
                ("dtype", self.dtype),
                ("shapes", self.shape_set),
                ("config", self.config),
                ("arch", self.arch),
                ("sweep space", self.space if self.space != "own" else None),
            )
            if value
        ]
        return "options: " + (" · ".join(chosen) if chosen else "the defaults")

    def shapes(self, entry: KernelEntry) -> list[list[int]] | None:
        """The chosen set's shapes, None when no set is chosen (or the kernel has no such set)."""
        if not self.shape_set:
            return None
        found = (entry.shapes or {}).get(self.shape_set)
        return [list(s) for s in found] if found else None

    def first_shape(self, entry: KernelEntry) -> list[int] | None:
        shapes = self.shapes(entry)
        return shapes[0] if shapes else None

    def validated(self) -> Selection:
        """Itself, once its config parses (a bad one is the CLI's own bad-config problem)."""
        if self.config:
            parse_settings(self.config, "config")
        return self

    # ---- each command's parameters, from its builder as the CLI's flags would give them -----

    def check_params(self, entry: KernelEntry) -> CheckParams:
        return build.check_params(entry, _listed(self.dtype), _listed(self.shape_set))

    def ir_params(self, entry: KernelEntry, stages: list[str], cross_check: bool) -> IrParams:
        """`ir`/`resources`: one config (or the kernel's own), the first shape of the set."""
        return build.ir_params(
            [self.config] if self.config else [],
            stages,
            arch=self.arch_number(),
            dtype=self.dtype,
            shape=self.first_shape(entry),
            cross_check=cross_check,
        )

    def sweep_params(self, entry: KernelEntry) -> SweepParams:
        return build.sweep_params(
            entry.name,
            space=self.space,
            shapes=self.shapes(entry),
            dtype=self.dtype,
            arch=self.arch_number(),
        )

    def bench_params(self, entry: KernelEntry) -> BenchParams:
        return build.bench_params(self.shapes(entry), _listed(self.dtype))

    def profile_case(self, entry: KernelEntry) -> str:
        """`--case SHAPE[:DTYPE]`; "" = the command's default (the first bench shape)."""
        shape = self.first_shape(entry)
        if shape is None and self.dtype:
            bench = (entry.shapes or {}).get("bench")
            shape = list(bench[0]) if bench else None
        if shape is None:
            return ""
        return shape_text(shape) + (f":{self.dtype}" if self.dtype else "")

    def arch_number(self) -> int | None:
        return parse_arch(self.arch) if self.arch else None


def run_check(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    started = time.time()
    try:
        params = sel.check_params(entry)
    except WorkbenchError as exc:
        return refused("check", entry, exc.problem, started)
    return from_outcome("check", start.check(entry, params, TIMEOUT, on_event, cancel))


def run_ir(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench ir NAME`: every stage of the chosen config (or of the kernel's own)."""
    return _compile("ir", entry, sel, list(STAGES), on_event, cancel)


def run_resources(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench resources NAME`: the ir job for TTIR, with the GPU launch cross-checked."""
    return _compile("resources", entry, sel, ["ttir"], on_event, cancel)


def _compile(
    action: str,
    entry: KernelEntry,
    sel: Selection,
    stages: list[str],
    on_event: OnEvent,
    cancel: threading.Event,
) -> Finished:
    started = time.time()
    try:
        params = sel.ir_params(entry, stages, cross_check=action == "resources")
    except WorkbenchError as exc:
        return refused(action, entry, exc.problem, started)
    outcome = start.job("ir", entry, params, TIMEOUT, on_event, cancel)
    return replace(from_outcome("ir", outcome), action=action)


def run_bench(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench bench NAME`: the bench job (a check at each shape, then the timings)."""
    started = time.time()
    if not machine.has_gpu():
        remedy = "past results: the Bench tab shows the newest stored bench of this kernel"
        return refused("bench", entry, needs_gpu("bench", remedy), started)
    params = sel.bench_params(entry)
    return from_outcome("bench", start.job("bench", entry, params, TIMEOUT, on_event, cancel))


def run_sweep(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench sweep NAME`: the kernel's own configs, compiled (and on a GPU, timed)."""
    started = time.time()
    try:
        params = sel.sweep_params(entry)
        result, outcomes = start.sweep(entry, params, on_event, cancel)
    except WorkbenchError as exc:
        return refused("sweep", entry, exc.problem, started)
    last = outcomes[-1] if outcomes else None
    done = Finished(
        "sweep",
        entry.name,
        last.status if last and result is None else "ok" if result else "error",
        result=result,
        problems=[("error", o.problem) for o in outcomes if o.problem],
        run_id=last.run_id if last else None,
        started=started,
        seconds=time.time() - started,
        file=entry.file,
    )
    if result is not None:
        done.lines = sweep_lines(result)
        if not result.complete and done.status == "ok":
            done.status = last.status if last else "error"
    if last:
        done.lines.append(f"results (sweep.json, sweep.png when timed) in {last.run_dir}")
    return done


def run_cache(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench cache NAME`: Triton's caches read, with the keys this kernel's inputs get."""
    started = time.time()
    try:
        report = start.cache(None, entry, sel.arch_number(), on_event=on_event, cancel=cancel)
    except WorkbenchError as exc:  # no cache folder yet, or it cannot be read
        return refused("cache", entry, exc.problem, started)
    problem = report.get("problem")
    return Finished(
        "cache",
        entry.name,
        "ok" if not problem else "cancelled" if problem.get("kind") == "cancelled" else "error",
        result=report,
        problems=[("problem", problem_of(problem))] if problem else [],
        lines=[summary_line(report)],
        started=started,
        seconds=time.time() - started,
        file=entry.file,
    )


def run_profile(
    entry: KernelEntry,
    sel: Selection,
    on_event: OnEvent,
    cancel: threading.Event,
    case: str | None = None,
    pin: dict | None = None,
) -> Finished:
    """`workbench profile NAME --tool ncu [--case] [--pin]`; `case` and `pin` (a sweep row's)
    override the selection's."""
    started = time.time()
    case = sel.profile_case(entry) if case is None else case
    try:
        request = build.profile_request(
            cases=[case] if case else [], pin=sel.config if pin is None else pin
        )
        run = start.profile(entry, request, on_event, cancel)
    except WorkbenchError as exc:  # refused before it started: no ncu, no GPU, bad spec
        return refused("profile", entry, exc.problem, started)
    outcome = run.outcome
    lines = []
    if run.summary:
        found = len(run.summary.get("findings", []))
        lines.append(f"{entry.name}: {run.summary['launches']} launch(es), {found} finding(s)")
    lines += [f"note: {n}" for n in run.notes]
    extra = f", {run.tool.name} {run.tool.version}"
    lines.append(run_footer(outcome.run_id, outcome.seconds, outcome.run_dir, extra))
    problems = [("error", run.problem)] if run.problem else []
    if outcome.store_problem:
        problems.append(("not saved", outcome.store_problem))
    return Finished(
        "profile",
        entry.name,
        outcome.status if run.summary is None else "ok",
        result=run.summary,
        problems=problems,
        lines=lines,
        run_id=outcome.run_id,
        started=started,
        seconds=outcome.seconds,
        file=entry.file,
    )


def run_diagnose(
    entry: KernelEntry,
    sel: Selection,
    on_event: OnEvent,
    cancel: threading.Event,
    try_fix: str | None = None,
) -> Finished:
    """`workbench diagnose NAME [--try FIX]`: every fact this host gives, read against the
    pitfall table; with `try_fix`, that finding's fix applied and timed beside the kernel."""
    started = time.time()
    opts = build.diagnose_options(dtype=sel.dtype, shape=sel.first_shape(entry))
    total = len(planned_steps(opts, try_fix is not None))
    done_steps: list[str] = []

    def on_step(name: str, said: str, seconds: float) -> None:
        done_steps.append(name)
        on_event({"event": "step", "step": name, "said": said, "seconds": round(seconds, 1)})
        on_event({"event": "progress", "done": len(done_steps), "total": total, "case": name})

    try:
        out = start.diagnose(entry, opts, try_fix, on_step, cancel)
    except WorkbenchError as exc:
        return refused("diagnose", entry, exc.problem, started)
    trial = [trial_text(out.trial)] if out.trial else []
    return Finished(
        "diagnose",
        entry.name,
        "cancelled" if cancel.is_set() else "ok",
        result=out.diagnosis,
        problems=[("error", p) for p in out.problems],
        lines=verdict_lines("diagnose", out.diagnosis)
        + trial
        + [run_footer(out.run_id, out.seconds, out.run_dir)],
        run_id=out.run_id,
        started=started,
        seconds=out.seconds,
        file=entry.file,
    )


def needs_gpu(action: str, remedy: str) -> Problem:
    return Problem("needs-gpu", machine.needs_gpu_message(action), remedy, source="usage")


def _listed(choice: str | None) -> list[str] | None:
    """A single choice as the list a command's repeatable flag gives; None: the default."""
    return [choice] if choice else None


Runner = Callable[[KernelEntry, Selection, OnEvent, threading.Event], Finished]
RUNNERS: dict[str, Runner] = {
    "check": run_check,
    "bench": run_bench,
    "resources": run_resources,
    "ir": run_ir,
    "sweep": run_sweep,
    "profile": run_profile,
    "cache": run_cache,
    "diagnose": run_diagnose,
}
"""Each command of `run.kinds.COMMANDS` as the app runs it."""
