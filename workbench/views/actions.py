"""The actions a person starts from the TUI, each the call its CLI command makes: a `Selection`
(dtype, shape set, config, arch) becomes the params that command builds from its flags, the same
stage function runs (`jobs.run_job`, `spread.run_sweep`, `build_report`, `session.profile`), and
its outcome comes back as one `Finished`: the typed result, every problem in the order the CLI
prints them, and the closing lines. Pure of any UI; runs in whatever thread calls it.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from workbench.catalog.discovery import KernelEntry
from workbench.runtime.errors import Problem, WorkbenchError
from workbench.runtime.grammar import parse_settings, shape_text

if TYPE_CHECKING:
    from workbench.sweep.result import SweepResult

OnEvent = Callable[[dict], None]


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


@dataclass
class Finished:
    """One action's end, as the TUI shows it where its result goes."""

    action: str
    kernel: str
    status: str
    """ok | error | timeout | crash | cancelled | refused (stopped before any job started)."""
    result: Any = None
    """CheckReport, IrResult, BenchResult, SweepResult, Diagnosis or bench trends; a cache report
    and an ncu summary stay the dicts `cache --json` prints and profile.json holds."""
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


# ---- params: what each command builds from its flags -------------------------------------------


def check_params(entry: KernelEntry, sel: Selection) -> dict:
    return {
        "dtypes": [sel.dtype] if sel.dtype else None,
        "shape_sets": [sel.shape_set] if sel.shape_set else None,
    }


def ir_params(entry: KernelEntry, sel: Selection, stages: list[str], configs: list[str]) -> dict:
    """`ir`/`resources`: one config (or the kernel's own), the first shape of the chosen set."""
    from workbench.ir.occupancy import parse_arch

    return {
        "arch": parse_arch(sel.arch) if sel.arch else None,
        "configs": configs,
        "stages": stages,
        "dtype": sel.dtype,
        "shape": sel.first_shape(entry),
        "out": None,
    }


def sweep_params(entry: KernelEntry, sel: Selection) -> dict:
    from workbench.ir.occupancy import parse_arch

    return {
        "shapes": sel.shapes(entry) or [],
        "dtype": sel.dtype,
        "space": sel.space,
        "jobs": None,
        "arch": parse_arch(sel.arch) if sel.arch else None,
        "resume": None,
        "config_timeout": 120.0,
    }


def bench_params(entry: KernelEntry, sel: Selection) -> dict:
    return {
        "shapes": sel.shapes(entry),
        "dtypes": [sel.dtype] if sel.dtype else None,
        "compile": True,
        "refresh_ceilings": False,
    }


def profile_case(entry: KernelEntry, sel: Selection) -> str:
    """`--case SHAPE[:DTYPE]` for the selection; "" = the command's default (first bench shape)."""
    shape = sel.first_shape(entry)
    if shape is None and sel.dtype:
        bench = (entry.shapes or {}).get("bench")
        shape = list(bench[0]) if bench else None
    if shape is None:
        return ""
    return shape_text(shape) + (f":{sel.dtype}" if sel.dtype else "")


# ---- the actions -------------------------------------------------------------------------------

IR_STAGES = ["ttir", "ttgir", "llir", "ptx", "sass"]


def run_check(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    from workbench.run import jobs

    job = jobs.Job("check", entry, check_params(entry, sel), timeout=900.0)
    return from_outcome("check", jobs.run_job(job, on_event, cancel))


def run_ir(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench ir NAME`: every stage of the chosen config (or of the kernel's own)."""
    return _compile("ir", entry, sel, IR_STAGES, on_event, cancel)


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
    from workbench.run import jobs

    params = ir_params(entry, sel, stages, [sel.config] if sel.config else [])
    if action == "resources":
        params["cross_check"] = True
    outcome = jobs.run_job(jobs.Job("ir", entry, params, timeout=900.0), on_event, cancel)
    return replace(from_outcome("ir", outcome), action=action)


def run_bench(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench bench NAME`: the bench job (a check at each shape, then the timings)."""
    from workbench.run import jobs, machine

    started = time.time()
    if not machine.has_gpu():
        remedy = "past results: the Bench tab shows the newest stored bench of this kernel"
        return refused("bench", entry, needs_gpu("bench", remedy), started)
    job = jobs.Job("bench", entry, bench_params(entry, sel), timeout=900.0)
    return from_outcome("bench", jobs.run_job(job, on_event, cancel))


def run_sweep(
    entry: KernelEntry, sel: Selection, on_event: OnEvent, cancel: threading.Event
) -> Finished:
    """`workbench sweep NAME`: the kernel's own configs, compiled (and on a GPU, timed)."""
    from workbench.sweep import spread

    started = time.time()
    try:
        result, outcomes = spread.run_sweep(entry, sweep_params(entry, sel), [], on_event, cancel)
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
    from workbench.cache.report import build_report
    from workbench.ir.occupancy import parse_arch
    from workbench.views.cache import summary_line

    started = time.time()
    try:
        arch = parse_arch(sel.arch) if sel.arch else None
        report = build_report(None, entry, arch, cancel=cancel, on_event=on_event)
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
    from workbench.diagnosis import diagnose_profile
    from workbench.profilers import session
    from workbench.views.text import run_footer

    started = time.time()
    case = profile_case(entry, sel) if case is None else case
    if pin is None:
        pin = parse_settings(sel.config, "--pin") if sel.config else {}
    request = session.Request(cases=[case] if case else [], pin=pin)
    try:
        run = session.profile(entry, request, on_event, cancel)
    except WorkbenchError as exc:  # refused before it started: no ncu, no GPU, bad spec
        return refused("profile", entry, exc.problem, started)
    outcome = run.outcome
    summary = diagnose_profile(run.summary) if run.summary is not None else None
    lines = []
    if summary:
        found = len(summary.get("findings", []))
        lines.append(f"{entry.name}: {summary['launches']} launch(es), {found} finding(s)")
    lines += [f"note: {n}" for n in run.notes]
    extra = f", {run.tool.name} {run.tool.version}"
    lines.append(run_footer(outcome.run_id, outcome.seconds, outcome.run_dir, extra))
    problems = [("error", run.problem)] if run.problem else []
    if outcome.store_problem:
        problems.append(("not saved", outcome.store_problem))
    return Finished(
        "profile",
        entry.name,
        outcome.status if summary is None else "ok",
        result=summary,
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
    from workbench.loop.diagnose import run
    from workbench.loop.gather import Options, planned_steps
    from workbench.views.diagnosis import trial_text
    from workbench.views.text import run_footer

    started = time.time()
    opts = Options(dtype=sel.dtype, shape=sel.first_shape(entry))
    total = len(planned_steps(opts, try_fix is not None))
    done_steps: list[str] = []

    def on_step(name: str, said: str, seconds: float) -> None:
        done_steps.append(name)
        on_event({"event": "step", "step": name, "said": said, "seconds": round(seconds, 1)})
        on_event({"event": "progress", "done": len(done_steps), "total": total, "case": name})

    try:
        out = run(entry, opts, try_fix, on_step, cancel)
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
    from workbench.run import machine

    return Problem("needs-gpu", machine.needs_gpu_message(action), remedy, source="usage")


Runner = Callable[[KernelEntry, Selection, OnEvent, threading.Event], Finished]


@dataclass(frozen=True)
class Action:
    name: str
    title: str
    run: Runner
    unit: str
    """What its progress counts: cases, configs, steps."""
    gpu_only: bool = False
    tabs: tuple[str, ...] = ()
    """The tabs its result fills; the first is the one shown when it starts."""


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action("check", "check against the reference", run_check, "cases", tabs=("check",)),
        Action("bench", "benchmark (GPU)", run_bench, "cases", gpu_only=True, tabs=("bench",)),
        Action("resources", "resources per config", run_resources, "configs", tabs=("resources",)),
        Action("ir", "IR at every stage", run_ir, "configs", tabs=("ir", "resources")),
        Action("sweep", "sweep the autotune configs", run_sweep, "configs", tabs=("sweep",)),
        Action("profile", "profile under ncu (GPU)", run_profile, "steps", True, ("profile",)),
        Action("cache", "read Triton's caches", run_cache, "steps", tabs=("cache",)),
        Action(
            "diagnose", "diagnose: every fact, ranked", run_diagnose, "steps", tabs=("diagnosis",)
        ),
    )
}
"""Every action the app can start, by name: the same names as the CLI's commands."""


# ---- outcomes as Finished ----------------------------------------------------------------------


def typed(kind: str, result: dict | None) -> Any:
    """A stored or returned result dict as the type its command renders."""
    if result is None:
        return None
    if kind == "check":
        from workbench.check.result import CheckReport

        return CheckReport.from_dict(result)
    if kind == "ir":
        from workbench.ir.result import IrResult

        return IrResult.from_dict(result)
    if kind == "bench":
        from workbench.bench.result import BenchResult

        return BenchResult.from_dict(result)
    if kind == "sweep":
        from workbench.sweep.result import SweepResult

        # as recorded: from_dict would explain the rows anew, and a run stored under an older
        # analysis would then read differently from what it said when it ran
        return SweepResult(**result)
    if kind == "diagnose":
        from workbench.diagnosis.facts import Diagnosis

        return Diagnosis.from_dict(result)
    raise ValueError(f"no typed result for {kind} (cache reports and ncu summaries stay dicts)")


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


def from_outcome(kind: str, outcome: Any) -> Finished:
    """A finished child job (a `jobs.Outcome`) as the app shows it."""
    from workbench.views.text import run_footer

    result = typed(kind, outcome.result)
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
