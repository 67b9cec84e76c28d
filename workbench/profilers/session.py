"""One profile run: choose filters, run the target under ncu or nsys, read what it wrote.

Parent side (no torch). Results already produced are kept: the report, the tool's log and the
parsed summary (`profile.json`) stay in the run's folder even when a later step fails. The
summary holds what ncu measured; its findings are the diagnosis's, made where it is read
(`diagnosis.diagnose_profile`).
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from workbench.catalog.discovery import KernelEntry
from workbench.profilers import ncu as ncu_cmd
from workbench.profilers import nsys as nsys_cmd
from workbench.profilers import nsysreport, tools
from workbench.profilers.names import Config, jit_kernel_names, range_name
from workbench.profilers.result import TargetResult
from workbench.profilers.toolerrors import Filters, classify, timeout_problem
from workbench.run import jobs, machine
from workbench.run.params import ProfileParams
from workbench.runtime.errors import Problem, WorkbenchError, fail
from workbench.runtime.grammar import parse_case
from workbench.runtime.outdir import OutDir

TOOLS = ("ncu", "nsys")


@dataclass
class Request:
    tool: str = "ncu"
    preset: str = "quick"
    metrics: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    """SHAPE[:DTYPE] strings; empty = the first "bench" shape in the first dtype."""
    warmup: int = 2
    repeats: int | None = None
    """Calls inside the range; default 1 for ncu (each is replayed), 10 for nsys."""
    launch_count: int | None = None
    kernel_filter: bool = True
    """Filter ncu by the Triton kernel names the spec declares (`jit=`)."""
    timeout: float = 900.0
    pin: dict = field(default_factory=dict)
    """One config's values (constexprs and num_warps/num_stages/...) every launch uses: a sweep's
    loser profiled as it ran there."""


@dataclass
class ProfileRun:
    tool: tools.Tool
    command: list[str]
    outcome: jobs.Outcome
    report: str | None = None
    summary: dict | None = None
    problem: Problem | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "tool": self.tool.to_dict(),
            "command": self.command,
            "run": self.outcome.to_dict(),
            "report": self.report,
            "summary": self.summary,
            "problem": self.problem.to_dict() if self.problem else None,
            "notes": self.notes,
        }


def configs_for(entry: KernelEntry, texts: list[str]) -> list[Config]:
    default_dtype = entry.dtypes[0] if entry.dtypes else None
    if texts:
        return [Config(*parse_case(t, default_dtype)) for t in texts]
    shapes = entry.shapes or {}
    chosen = shapes.get("bench") or next(iter(shapes.values()), None) or [[]]
    return [Config(tuple(chosen[0]), default_dtype)]


def plan(
    entry: KernelEntry, req: Request
) -> tuple[tools.Tool, list[str], ProfileParams, Filters, list]:
    """(tool, wrapper command, child params, filters, notes), without running anything."""
    if req.tool not in TOOLS:
        raise fail("unknown-tool", f"no profiler {req.tool!r}", f"use one of {', '.join(TOOLS)}")
    if not machine.has_gpu():
        raise fail(
            "needs-gpu",
            f"`profile --tool {req.tool}` needs a CUDA GPU and this machine has none",
            "run it on a GPU host; here, read a saved report with "
            "`python -m workbench profile --import FILE`",
            source="usage",
        )
    tool = tools.find(req.tool)
    configs = configs_for(entry, req.cases)
    ranges = [range_name(entry.name, c) for c in configs]
    repeats = req.repeats or (1 if req.tool == "ncu" else 10)
    params = ProfileParams([c.to_dict() for c in configs], req.warmup, repeats, req.pin)
    notes: list[str] = []
    if req.tool == "nsys":
        return tool, nsys_cmd.command(tool.path), params, Filters(), notes
    kernels = jit_kernel_names(entry.file, entry.name) if req.kernel_filter else []
    count = req.launch_count or (repeats * len(configs) * len(kernels) if kernels else None)
    known = None
    if req.metrics:  # an unknown name can stop the program and lose the run: check first
        known = ncu_cmd.known_metrics(tool.path)
        if known is None:
            notes.append("could not list this ncu's metrics; metric names were not checked")
    p = ncu_cmd.plan(tool.path, req.preset, ranges, kernels, req.metrics, count, known)
    if p.dropped:
        notes.append(f"this ncu lacks {', '.join(p.dropped)}: left out")
    return tool, p.command(), params, p.filters, notes


def profile(
    entry: KernelEntry,
    req: Request,
    on_event: jobs.OnEvent | None = None,
    cancel: threading.Event | None = None,
) -> ProfileRun:
    tool, wrap, params, filters, notes = plan(entry, req)
    launcher = [sys.executable, "-m", "workbench.profilers.launch"]
    job = jobs.Job("profile-target", entry, params, timeout=req.timeout)
    outcome = jobs.run_job(job, on_event, cancel, wrap=launcher + wrap)
    run = ProfileRun(tool, wrap, outcome, notes=notes)
    run_dir = Path(outcome.run_dir)
    log = (run_dir / "log.txt").read_text(errors="replace") if run_dir.is_dir() else outcome.log
    target = TargetResult.from_dict(outcome.result) if outcome.result else None
    launched = target.jit_kernels if target else None
    if outcome.status == "timeout":
        run.problem = timeout_problem(req.tool, req.timeout, filters.launch_count)
    elif outcome.status == "cancelled":
        run.problem = outcome.problem
    else:
        run.problem = classify(log, req.tool, filters, launched)
    try:
        if req.tool == "ncu":
            _read_ncu(run, run_dir, tool)
        else:
            _read_nsys(run, run_dir, tool)
    except WorkbenchError as exc:
        run.problem = run.problem or exc.problem
    if run.problem is None and outcome.problem is not None:
        run.problem = outcome.problem
    if run.summary is not None:
        (run_dir / "profile.json").write_text(json.dumps(run.summary, indent=1, default=str))
    return run


def _read_ncu(run: ProfileRun, run_dir: Path, tool: tools.Tool) -> None:
    from workbench.profilers import ncureport

    report = run_dir / f"{ncu_cmd.REPORT_STEM}.ncu-rep"
    if not report.is_file():
        return
    run.report = str(report)
    run.summary = ncureport.load(str(report), tool.path).to_dict()


def _read_nsys(run: ProfileRun, run_dir: Path, tool: tools.Tool) -> None:
    report = run_dir / f"{nsys_cmd.REPORT_STEM}.nsys-rep"
    if not report.is_file():
        return
    run.report = str(report)
    sqlite = nsys_cmd.export_sqlite(tool.path, str(report))
    run.summary = nsysreport.load(sqlite).to_dict()


def import_file(path: str) -> dict:
    """Summary of a saved report: .ncu-rep, ncu CSV, .nsys-rep (needs nsys) or nsys .sqlite."""
    p = Path(path)
    if not p.exists():
        raise fail("no-such-file", f"{path} does not exist", "check the path")
    suffix = p.suffix.lower()
    if suffix in (".ncu-rep", ".ncu-repz", ".csv"):
        from workbench.profilers import ncureport

        ncu_path = None
        if suffix != ".csv" and ncureport.import_ncu_report() is None:
            ncu_path = tools.find("ncu").path
        return ncureport.load(path, ncu_path).to_dict()
    if suffix == ".sqlite":
        return nsysreport.load(path).to_dict()
    if suffix == ".nsys-rep":
        sqlite = p.with_suffix(".sqlite")
        if not sqlite.is_file():  # exported beside it: never through a link standing there
            OutDir(p.parent, "--import").check(sqlite.name)
            return nsysreport.load(nsys_cmd.export_sqlite(tools.find("nsys").path, path)).to_dict()
        result = nsysreport.load(str(sqlite)).to_dict()
        newer = p.stat().st_mtime > sqlite.stat().st_mtime
        result.setdefault("notes", []).append(
            f"read {sqlite}, the export beside it; {p.name} itself was not opened"
            + (" and is newer than that export" if newer else "")
            + f" (delete {sqlite.name} to export {p.name} again)"
        )
        return result
    raise fail(
        "unknown-report",
        f"{path}: not a report this can read (suffix {suffix or 'none'})",
        "give an .ncu-rep, an ncu CSV (--csv --page raw), an .nsys-rep or an nsys .sqlite",
    )
