"""Gather the facts about one kernel that this machine can give, by running the jobs.

Everywhere: the check (interpreter on a CPU host), the compile of the launched config with its
static findings, its cross-compiled neighbours' resources, and the autotune-cache keys. On a GPU
host: the timings at one bench shape (with eager vs CUDA-graph launch facts) and Nsight Compute.
Reports imported with `--import` stand in for the profilers. A step that fails leaves its reason
in `Facts.missing`; the facts already gathered are kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workbench.bench.result import BenchResult
from workbench.cache import static as cache_static
from workbench.cache.report import installed_triton
from workbench.catalog.discovery import KernelEntry
from workbench.check.result import CheckReport
from workbench.diagnosis import diagnose_profile
from workbench.diagnosis.facts import Facts, LaunchFacts
from workbench.diagnosis.finding import Finding
from workbench.ir.result import IrResult
from workbench.profilers import sanitizer, session, tools
from workbench.run import jobs, machine
from workbench.run.params import BenchParams, CheckParams, IrParams, Params, SweepParams
from workbench.runtime.errors import Problem, WorkbenchError
from workbench.runtime.grammar import shape_text
from workbench.sweep.result import SweepResult

OnStep = Callable[[str, str, float], None]
"""(step, what it gave or why not, seconds)."""
STEPS = ("check", "compile", "neighbours", "cache", "sanitize", "bench", "ncu", "import")
NEIGHBOUR_IDS = ("register-spill",)
"""Static findings whose fix is another config: only then are the neighbours compiled."""


@dataclass
class Options:
    dtype: str | None = None
    shape: list[int] | None = None
    """The shape of the measured facts (default: the kernel's first bench shape)."""
    gpu_facts: str = "auto"
    """auto: time and profile when this host has a GPU; none: static and checked facts only."""
    imports: list[str] = field(default_factory=list)
    timeout: float = 900.0
    sanitize: str | None = None
    """A compute-sanitizer tool to run the check under (GPU); memcheck runs anyway when the
    check fails and compute-sanitizer is there."""


@dataclass
class Gathered:
    facts: Facts
    shape: list[int] | None = None
    """The shape the measured facts are taken at."""
    dtype: str | None = None
    runs: list[jobs.Outcome] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    """One per step: name, seconds, and what it gave or why it did not run."""


def gather(
    entry: KernelEntry,
    opts: Options,
    on_step: OnStep | None = None,
    cancel: threading.Event | None = None,
    profile: bool = True,
) -> Gathered:
    """`profile=False` leaves Nsight Compute out (a trial measures for itself)."""
    dtype = opts.dtype or (entry.dtypes[0] if entry.dtypes else None)
    shape = opts.shape or _bench_shape(entry)
    facts = Facts(kernel=entry.name, file=entry.file)
    out = Gathered(facts, shape, dtype)
    gpu = opts.gpu_facts == "auto" and machine.has_gpu()

    lock = threading.Lock()

    def step(name: str, do: Callable[[], str]) -> None:
        if cancel is not None and cancel.is_set():
            facts.missing[name] = "cancelled"
            return
        start = time.monotonic()
        try:
            said = do()
        except WorkbenchError as exc:
            said = facts.missing[name] = f"{exc.problem.cause} ({exc.problem.remedy})"
        seconds = time.monotonic() - start
        with lock:
            out.steps.append({"step": name, "seconds": round(seconds, 2), "said": said})
        if on_step:
            on_step(name, said, seconds)

    def job(kind: str, params: Params, timeout: float | None = None) -> dict:
        outcome = jobs.run_job(jobs.Job(kind, entry, params, timeout or opts.timeout), None, cancel)
        out.runs.append(outcome)
        return result_of(outcome)

    def check() -> str:
        facts.check = CheckReport.from_dict(job("check", CheckParams([dtype] if dtype else None)))
        return facts.check.summary().get("verdict") or ("correct" if facts.check.correct else "?")

    def compile_() -> str:
        # on a GPU, the launches of the case the bench times (a kernel_fn may pick another
        # kernel per shape: attention's Gluon, TMA and pointer kernels); here, the first check
        # shape's, which the interpreter makes cheaply
        at = list(shape) if gpu and shape else None
        params = IrParams(dtype=dtype, shape=at, stages=["ttir", "ttgir"])
        ir = IrResult.from_dict(job("ir", params))
        facts.arch = ir.arch
        facts.compile_findings = [Finding.from_dict(f) for f in ir.findings]
        return f"{len(ir.variants)} config(s) on {ir.arch}, {len(ir.findings)} static finding(s)"

    def neighbours() -> str:
        if not any(f.id in NEIGHBOUR_IDS and f.severity != "info" for f in facts.compile_findings):
            return "skipped: no spill to fix with another config"
        shapes = [list(shape)] if gpu and shape else None
        params = SweepParams(shapes=shapes, dtype=dtype, space="neighbours", time=False)
        rows = SweepResult.from_dict(job("sweep", params)).rows
        facts.configs = [dict(r) for r in rows]  # the diagnosis, below the sweep, reads dicts
        spill_free = sum(1 for r in rows if not (r.get("resources") or {}).get("spill_bytes"))
        return f"{len(rows)} configs compiled, {spill_free} without spills"

    def cache() -> str:
        source = Path(entry.file).read_text()
        facts.cache = cache_static.findings(source, entry.file, installed_triton())
        return f"{len(facts.cache)} autotune-key finding(s)"

    def bench() -> str:
        shapes = [list(shape)] if shape else None
        params = BenchParams(shapes, [dtype] if dtype else None, compile=False, launches=True)
        facts.bench = BenchResult.from_dict(job("bench", params))
        facts.gpu = facts.bench.device
        rec = facts.bench.records[0] if facts.bench.records else None
        if rec is None or rec.ms is None:
            return f"not timed: {rec.reason if rec else 'no record'}"
        if rec.launch:
            facts.launch = _launch_facts(rec.launch, rec.shape, rec.dtype)
        ratio = f", {rec.roofline_ratio:.2f} of the {rec.bound} roofline" if rec.bound else ""
        return f"{rec.ms:.4g} ms at {shape_text(rec.shape)}{ratio}"

    def ncu() -> str:
        tools.find("ncu")  # a missing ncu says so here, before a child starts
        case = [f"{shape_text(shape)}" + (f":{dtype}" if dtype else "")] if shape else []
        req = session.Request(tool="ncu", preset="memory", cases=case, timeout=opts.timeout)
        run = session.profile(entry, req, cancel=cancel)
        out.runs.append(run.outcome)
        if run.summary is None:
            raise WorkbenchError(run.problem or Problem(
                "ncu-failed",
                "ncu wrote no report",
                f"see its log in {run.outcome.run_dir}; run `python -m workbench profile NAME "
                "--tool ncu` alone to see it whole",
                source="tool",
            ))  # fmt: skip
        facts.ncu = diagnose_profile(run.summary)
        return f"{len(run.summary.get('kernels', []))} launch(es) profiled"

    def sanitize() -> str:
        tool = opts.sanitize or "memcheck"
        if not opts.sanitize and (facts.check is None or facts.check.correct):
            return "skipped: the check passed (--sanitize TOOL runs one anyway)"
        params = CheckParams([dtype] if dtype else None)
        outcome = sanitizer.sanitized_check(entry, tool, params, opts.timeout, None, cancel)
        out.runs.append(outcome)
        report = CheckReport.from_dict(result_of(outcome)).sanitizer
        if facts.check is not None:
            facts.check.sanitizer = report
        found = report.get("accesses") or []
        return f"{tool}: {report.get('errors')} error(s), {len(found)} finding(s)"

    def imports() -> str:
        for path in opts.imports:
            summary = session.import_file(path)
            if summary.get("tool") == "ncu":
                facts.ncu = summary
            else:
                facts.launch = _nsys_launch_facts(summary, facts.launch)
        return f"{len(opts.imports)} report(s) read"

    # The check and the compiles run side by side (the GPU barely works in either); the timings
    # and the profile come after, alone on the GPU.
    def compiles() -> None:
        step("compile", compile_)
        step("neighbours", neighbours)

    side = threading.Thread(target=compiles)
    side.start()
    step("check", check)
    step("cache", cache)
    side.join()
    if gpu:
        step("sanitize", sanitize)
        step("bench", bench)
        if profile:
            step("ncu", ncu)
    else:
        why = "asked not to (--gpu-facts none)" if opts.gpu_facts == "none" else "no GPU here"
        for name in ("bench", "ncu") + (("sanitize",) if opts.sanitize else ()):
            facts.missing.setdefault(name, why)
    if opts.imports:
        step("import", imports)
    return out


def planned_steps(opts: Options, trying: bool = False) -> list[str]:
    """The steps `gather` (and a trial) will report on this host, for progress."""
    steps = ["check", "compile", "neighbours", "cache"]
    if opts.gpu_facts == "auto" and machine.has_gpu():
        steps += ["sanitize", "bench", "try"] if trying else ["sanitize", "bench", "ncu"]
    return steps + (["import"] if opts.imports else [])


def _bench_shape(entry: KernelEntry) -> list[int] | None:
    sets = entry.shapes or {}
    chosen = sets.get("bench") or next(iter(sets.values()), None)
    return list(chosen[0]) if chosen else None


def _launch_facts(d: dict, shape: list[int], dtype: str) -> LaunchFacts:
    eager = d.get("eager_ms")
    return LaunchFacts(
        launches=d.get("launches"),
        wall_ns=eager * 1e6 if eager else None,
        gpu_busy_ns=d.get("gpu_busy_ns"),
        mean_gap_ns=d.get("mean_gap_ns"),
        eager_ms=eager,
        graph_ms=d.get("graph_ms"),
        graph_correct=d.get("graph_correct"),
        shape=list(shape),
        dtype=dtype,
    )


def _nsys_launch_facts(summary: dict, known: LaunchFacts | None) -> LaunchFacts:
    """Launch facts from an Nsight Systems export: its NVTX range with the most GPU time, per
    instance of the range (one call of the workload each)."""
    ranges = [r for r in summary.get("ranges") or [] if r.get("kernels")]
    facts = known or LaunchFacts()
    if not ranges:
        return facts
    r = max(ranges, key=lambda r: r.get("gpu_busy_ns") or 0)
    n = max(int(r.get("instances") or 1), 1)
    facts.launches = round(r["kernels"] / n)
    facts.wall_ns = (r.get("gpu_span_ns") or 0) / n or facts.wall_ns
    facts.gpu_busy_ns = (r.get("gpu_busy_ns") or 0) / n
    facts.mean_gap_ns = r.get("gap_avg_ns") or facts.mean_gap_ns
    return facts


def result_of(outcome: jobs.Outcome) -> dict:
    """A finished job's result; one that gave none raises its problem (or why it has none)."""
    if outcome.result is not None:
        return outcome.result
    kind = outcome.job.kind
    raise WorkbenchError(
        outcome.problem
        or Problem(
            f"{kind}-failed",
            f"the {kind} step gave no result ({outcome.status})",
            f"see its log in {outcome.run_dir}; run `python -m workbench {kind} NAME` alone "
            "to see it whole",
            source="tool",
        )
    )
