"""One kernel's report page, part by part, from what the store holds: check verdicts, bench
results with their roofline plot, the newest sweep, resources per config, the newest ncu profile,
the newest diagnosis (and the fix it tried), and the bench times across runs.

A part that was never run says which command fills it; a stored result that cannot be read is
shown as a problem (cause, remedy) and the other parts are written all the same.
"""

from __future__ import annotations

import os
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from workbench.bench import history
from workbench.bench import report as benchreport
from workbench.bench.clock_rules import case_note
from workbench.bench.result import BenchRecord, BenchResult
from workbench.loop.trial import Trial, alternatives
from workbench.report import collect, plots
from workbench.report.collect import Found, Kernel
from workbench.report.doc import Block, Code, Heading, Image, Inline, Notice, Page, Pre, para, table
from workbench.run.kinds import COMMANDS, Command, for_tab
from workbench.run.store import RESULT_ERRORS, RunRecord
from workbench.runtime.errors import Problem
from workbench.runtime.grammar import shape_text
from workbench.runtime.outdir import OutDir
from workbench.sweep import analysis
from workbench.sweep import plot as sweepplot
from workbench.sweep.result import SweepResult
from workbench.sweep.space import autotune_snippet
from workbench.views import bench as benchview
from workbench.views import diagnosis as diagview
from workbench.views import rows as viewrows
from workbench.views import sweep as sweepview
from workbench.views.text import fmt

T = TypeVar("T")
CASE_STATUSES = ("passed", "failed", "error", "skipped")
CASES_SHOWN = 12
"""Failing check cases listed; the rest are counted."""
PARTS = ("check", "bench", "sweep", "resources", "profile", "diagnosis", "history")
"""The page's parts in order, and the index's columns: each the tab of the same name, read from
the runs of the command that fills it (`run.kinds.for_tab`)."""


IMAGES = ("roofline.png", "sweep.png", "trend.png")
"""Every image a page may have: the only files of its image folder a report replaces or prunes."""


@dataclass
class Images:
    """Where a page's PNGs go, and how the page refers to them (relative). A plot is drawn into
    `staging`, a private folder, then put in the report folder through `out`, which follows no
    link: a page without plots makes no image folder."""

    out: OutDir
    folder: str
    """The image folder, inside `out`."""
    href: str
    staging: Path
    written: list[Path] = field(default_factory=list)

    def path(self, name: str) -> Path:
        if name not in IMAGES:
            raise ValueError(f"{name} is not one of the report's images {IMAGES}")
        return self.staging / name

    def block(self, path: Path, alt: str) -> Image:
        self.written.append(self.out.put(f"{self.folder}/{path.name}", path.read_bytes()))
        return Image(f"{self.href}/{path.name}", alt)


@dataclass
class Built:
    page: Page
    cells: dict[str, str]
    """One short cell per part, for the index."""
    problems: list[Problem]
    missing: list[str]
    """The commands that would fill the parts not run yet."""


def kernel_page(kernel: Kernel, images: Images, generated: str) -> Built:
    builder = _Builder(kernel, images)
    for part in PARTS:
        builder.part(part)
    intro = [para("Generated ", generated, " from ", _store_name(kernel), ".")]
    if kernel.file:
        intro.insert(0, para("Kernel file: ", Code(_shown_path(kernel.file)), "."))
    page = Page(kernel.name, intro + builder.blocks)
    return Built(page, builder.cells, builder.problems, builder.missing)


def _store_name(kernel: Kernel) -> str:
    return _shown_path(str(kernel.store.path))


def _shown_path(path: str) -> str:
    """Relative to the working folder where it is inside it: a committed report names no
    machine's folders."""
    p = Path(path)
    return os.path.relpath(p) if p.is_absolute() and p.is_relative_to(Path.cwd()) else path


def _filler(part: str) -> Command:
    """The command that fills a part: its tab's; the history's bench times come from `bench`."""
    return for_tab(part) or COMMANDS["bench"]


def when(run: RunRecord) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(run.started))


def run_text(run: RunRecord) -> str:
    took = f", {run.seconds:.1f} s" if run.seconds is not None else ""
    return f"run {run.id} ({run.kind}, {when(run)}, {run.mode}{took})"


class _Builder:
    def __init__(self, kernel: Kernel, images: Images):
        self.k, self.images = kernel, images
        self.blocks: list[Block] = []
        self.cells: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.missing: list[str] = []
        self.run: RunRecord | None = None
        """The run the part being built reads: a failure to render it names that run."""

    def part(self, name: str) -> None:
        title, build = {
            "check": ("Check", self.check),
            "bench": ("Bench", self.bench),
            "sweep": ("Autotune sweep (newest)", self.sweep),
            "resources": ("Resources per config", self.resources),
            "profile": ("Nsight Compute profile (newest)", self.profile),
            "diagnosis": ("Diagnosis (newest)", self.diagnosis),
            "history": ("History", self.history),
        }[name]
        self.blocks.append(Heading(2, title))
        marks = len(self.blocks), len(self.problems), len(self.missing), len(self.images.written)
        self.run = None
        try:
            build()
        except RESULT_ERRORS as exc:  # a result read back typed, but not as its views expect
            del self.blocks[marks[0] :], self.problems[marks[1] :], self.missing[marks[2] :]
            del self.images.written[marks[3] :]  # the part is replaced whole by its problem
            run = self.run
            action = _filler(name).name
            problem = (
                self.k.unreadable(run, exc, action)
                if run
                else Problem(
                    "corrupt-result",
                    f"the {name} part cannot be made from the stored results "
                    f"({type(exc).__name__}: {exc})",
                    f"run `{self.k.command(action)}` for a fresh result",
                    source="environment",
                )
            )
            self.problem(replace(problem, detail=traceback.format_exc()))
            self.cells[name] = "unreadable"

    # ---- shared pieces ----------------------------------------------------------------------

    def add(self, *blocks: Block) -> None:
        self.blocks.extend(blocks)

    def problem(self, p: Problem) -> None:
        self.problems.append(p)
        where = [" (", Code(_shown_path(p.file)), ")"] if p.file else []
        self.add(Notice("problem", para(p.cause, *where, ". Remedy: ", p.remedy).parts))

    def not_run(self, action: str, options: str = "", *more: Inline) -> None:
        command = self.k.command(action, options)
        self.missing.append(command)
        self.add(Notice("missing", (Code(command), *more)))

    def found(self, found: Found, part: str) -> bool:
        """Problems and failed newer runs; True when there is a result to show."""
        for p in found.problems:
            self.problem(p)
        for run in found.failed:
            why = f": {run.problem.get('cause')}" if run.problem else ""
            self.add(para(f"The newer {run_text(run)} ended {run.status}{why}"))
        self.run = found.run
        if found.value is None or found.run is None:
            self.cells[part] = "-"
            return False
        self.add(para("From ", run_text(found.run), "."))
        return True

    def newest(
        self, part: str, read: Callable[[RunRecord], T], options: str = "", *more: Inline
    ) -> T | None:
        """The newest result `read` can read of the runs the part shows, said to be from its
        run; None when there is none, the part then naming the command (with `options`) that
        fills it."""
        command = _filler(part)
        found = self.k.newest(command.shows, read, command.name)
        if not self.found(found, part):
            self.not_run(command.name, options, *more)
            return None
        return found.value

    def image(self, made: Path | str | None, alt: str) -> bool:
        if made is None:
            return False
        self.add(self.images.block(Path(made), alt))
        return True

    # ---- parts ------------------------------------------------------------------------------

    def check(self) -> None:
        report = self.newest("check", collect.read_check)
        if report is None:
            return
        verdict, *facts = viewrows.check_verdict(report).splitlines()
        self.add(para(verdict), *(para(f.strip()) for f in facts))
        self.cells["check"] = "correct" if report.correct else "NOT correct"
        groups: dict[tuple[str, str], list] = {}
        for c in report.cases:
            groups.setdefault((c.dtype, c.layout), []).append(c)
        rows = []
        for (dtype, layout), cases in groups.items():
            errs = [c.rel_l2 for c in cases if c.rel_l2 is not None]
            counts = [sum(c.status == s for c in cases) for s in CASE_STATUSES]
            rows.append((dtype, layout, *counts, fmt(max(errs, default=None))))
        self.add(table(("dtype", "layout", *CASE_STATUSES, "worst relL2"), rows))
        bad = [c for c in report.cases if c.status in ("failed", "error")]
        if bad:
            self.add(para(f"Cases that failed ({len(bad)}):"))
            rows = [(c.shape_set, *viewrows.check_row(c)) for c in bad[:CASES_SHOWN]]
            self.add(table(("set", *viewrows.CHECK_HEADERS), rows))
            if len(bad) > CASES_SHOWN:
                self.add(para(f"... and {len(bad) - CASES_SHOWN} more (the run's JSON has all)."))

    def _bench_runs(self) -> tuple[list[tuple[RunRecord, BenchResult]], list[RunRecord]]:
        """Readable bench results, newest first, and every bench run (for the trend)."""
        runs, problem = self.k.runs(_filler("bench").shows)
        found: Found = Found(problems=[problem] if problem else [])
        readable = []
        for run in runs:
            self.k.file = self.k.file or run.file
            try:
                readable.append((run, collect.read_bench(run)))
            except collect.Absent:
                if not readable and run.status != "ok":
                    found.failed.append(run)
            except RESULT_ERRORS as exc:
                found.problems.append(self.k.unreadable(run, exc, "bench"))
        found.run, found.value = readable[0] if readable else (None, None)
        self.found(found, "bench")
        return readable, runs

    def bench(self) -> None:
        readable, _ = self._bench_runs()
        if not readable:
            self.not_run("bench", "", " (on a GPU host)")
            return
        newest = readable[0][1]
        cases: dict[tuple, tuple[RunRecord, BenchRecord]] = {}
        for run, result in readable:  # newest first: the newest record of each case stays
            if result.device != newest.device:
                continue
            for rec in result.records:
                cases.setdefault((tuple(rec.shape), rec.dtype), (run, rec))
        self.add(
            para(
                f"The newest result of each case on {newest.device} "
                f"({len(cases)} case(s) from {len({r.id for r, _ in cases.values()})} run(s))."
            ),
            para(benchreport.ceilings_line(newest.ceilings.to_dict())),
        )
        rows, notes = [], []
        for run, rec in cases.values():
            rows.append(_bench_row(rec, run.id))
            if rec.status != "ok":
                notes.append(f"{rec.where}: {rec.status}: {rec.reason or 'see the run log'}")
            elif isinstance(rec.speedup_vs_compile, str):
                notes.append(f"{rec.where}: torch.compile {rec.speedup_vs_compile}")
            if rec.note:
                notes.append(f"{rec.where}: {rec.note}")
            if clock_note := case_note(rec.clocks, rec.torch_clocks):
                notes.append(f"{rec.where}: {clock_note}")
            mode = rec.compile_mode or "default"
            mode_note = f"`vs compile` is against torch.compile(mode={mode!r})"
            if mode != "default" and mode_note not in notes:
                notes.append(mode_note)
        self.add(table(BENCH_HEADERS, rows), *(para(n) for n in notes))
        launched = [rec for _, rec in cases.values() if rec.launch]
        if launched:
            self.add(para("How one call launches, eagerly and replayed from one CUDA graph:"))
            self.add(table(benchview.LAUNCH_HEADERS, [benchview.launch_row(r) for r in launched]))
        ok = [rec for _, rec in cases.values() if rec.status == "ok"]
        made = plots.roofline(
            ok,
            newest.ceilings,
            f"{self.k.name} on {newest.device}",
            self.images.path("roofline.png"),
        )
        if not self.image(made, f"{self.k.name}: roofline"):
            self.add(para("No roofline plot: no timed case has a FLOP and byte model."))
        ratios = [rec.roofline_ratio for rec in ok if rec.roofline_ratio is not None]
        span = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else ""
        if ratios and f"{min(ratios):.2f}" == f"{max(ratios):.2f}":
            span = f"{min(ratios):.2f}"
        self.cells["bench"] = f"{len(ok)}/{len(cases)} timed" + (
            f", roofline {span}" if span else ""
        )

    def sweep(self) -> None:
        result = self.newest("sweep", collect.read_sweep)
        if result is None:
            return
        space = os.path.basename(result.space)
        head = f"{result.kernel} {result.dtype or ''}".strip()
        triton = f"Triton {result.triton_version}"
        where = result.gpu or result.arch
        self.add(para(f"{head} on {where} ({result.mode}, {triton}), space {space}."))
        for shape, rows in analysis.by_shape(result.rows).items():
            cells = [(n, Code(label), *rest) for n, label, *rest in sweepview.rows_of(rows)]
            self.add(Heading(3, shape), table(sweepview.HEADERS, cells))
            shared = sweepplot.shared_text(rows)
            if shared:
                self.add(para(shared[0].upper() + shared[1:] + "."))
            info = result.shapes[shape]
            if (info.get("triton") or {}).get("label"):
                self.add(para("Triton's own autotuner picked ", Code(info["triton"]["label"]), "."))
            if info.get("finding"):
                self.add(para(f"Finding: {info['finding']}"))
        timed = self.image(self._sweep_png(result), f"{self.k.name}: sweep")
        if not timed:
            self.add(para("No timings (a static sweep: compiled with resources only), no plot."))
        chosen = result.minimal_set["configs"]
        if chosen:
            self.add(para(f"The smallest set within 5% of each shape's best ({len(chosen)}):"))
            self.add(Pre(autotune_snippet(chosen)))
        for note in result.notes:
            self.add(para(f"Note: {note}"))
        best = analysis.ranked(result.rows)[:1]
        self.cells["sweep"] = f"{result.summary['configs']} configs" + (
            f", best {best[0]['ms']:.4g} ms" if best else ", static"
        )

    def _sweep_png(self, result: SweepResult) -> Path | str | None:
        """The sweep's own plot from its run folder (drawn when it ran), else drawn now."""
        path = self.images.path("sweep.png")
        kept = Path((self.run.artifacts if self.run else None) or "", "sweep.png")
        if self.run and self.run.artifacts and kept.is_file():
            return shutil.copyfile(kept, path)
        return sweepplot.png(result, path)

    def resources(self) -> None:
        ir = self.newest("resources", collect.read_ir, "", " (cross-compiles: no GPU needed)")
        if ir is None:
            return
        self.add(para(f"Compiled for {ir.arch} ({ir.mode}), Triton {ir.triton_version}."))
        self.add(table(viewrows.RESOURCE_HEADERS, [viewrows.resource_row(v) for v in ir.variants]))
        for v in ir.variants:
            if v.error:
                self.add(para(f"{v.label}: {v.error.get('cause')}"))
        if ir.findings:
            self.add(
                para("Static findings:"),
                table(FINDING_HEADERS, [_finding_row(f) for f in ir.findings]),
            )
        else:
            self.add(para("No static findings."))
        spilling = sum(v.spill_bytes > 0 for v in ir.variants)
        self.cells["resources"] = f"{len(ir.variants)} config(s), {spilling} spilling"

    def profile(self) -> None:
        summary = self.newest(
            "profile",
            collect.read_profile,
            " --tool ncu",
            " on a GPU host, or read a saved report: ",
            Code(f"python -m workbench profile {self.k.name} --import FILE.ncu-rep"),
        )
        if summary is None:
            return
        imported = self.run is not None and self.run.kind == "profile-import"
        how = "imported from" if imported else "profiled, report"
        self.add(
            para(
                f"Nsight Compute, {how} {os.path.basename(str(summary.get('file')))}: "
                f"{len(summary['kernels'])} launch(es)."
            )
        )
        headers, rows = viewrows.profile_facts(summary)
        self.add(table(headers, rows))
        rules = viewrows.rule_rows(summary)
        if rules:
            self.add(
                para("NVIDIA's rules, largest estimated gain first:"),
                table(viewrows.RULE_HEADERS, rules),
            )
        lines = viewrows.hot_line_rows(summary)
        if lines:
            self.add(para("Hottest source lines:"), table(viewrows.LINE_HEADERS, lines))
        measured = viewrows.measured_finding_rows(summary)
        if measured:
            self.add(
                para("Measured findings:"),
                table(("severity", "finding", "where", "title", "fix"), measured),
            )
        else:
            self.add(para(viewrows.NO_MEASURED_FINDINGS + "."))
        self.cells["profile"] = f"{len(measured)} finding(s)"

    def diagnosis(self) -> None:
        d = self.newest("diagnosis", collect.read_diagnosis)
        if d is None:
            return
        self.add(para(diagview.roofline_text(d.roofline)))
        if d.findings:
            rows = [(*r, f.title) for r, f in zip(diagview.finding_rows(d.findings), d.findings)]
            self.add(table((*diagview.FINDING_HEADERS, "title"), rows))
        else:
            self.add(para("No findings."))
        for i, f in enumerate(d.findings, 1):
            if f.severity == "info":
                continue
            self.add(Heading(3, f"{i}. [{f.severity}] {f.id}: {f.title}"))
            if ev := diagview.evidence_text(f.evidence):
                self.add(para(f"Evidence: {ev}"))
            if f.fix:
                self.add(para(f"Fix: {f.fix}"))
            if alts := alternatives(f):
                self.add(table(ALTERNATIVE_HEADERS, [_alternative_row(a) for a in alts]))
            if f.fix_id:
                command = self.k.command("diagnose", f" --try {f.id}")
                self.add(para("Try it: ", Code(command), " (GPU host)."))
        if d.routing:
            self.add(para(f"Routing: {d.routing}"))
        if d.agreement:
            rows = [
                (a.get("ours") or "-", a.get("ncu") or "-", a.get("verdict", ""), a.get("why", ""))
                for a in d.agreement
            ]
            self.add(
                para("Beside Nsight Compute's rules:"),
                table(("ours", "ncu", "verdict", "why"), rows),
            )
        if d.missing:
            self.add(para("Not gathered: " + "; ".join(f"{k} ({v})" for k, v in d.missing.items())))
        top = next((f.id for f in d.findings if f.severity != "info"), None)
        self.cells["diagnosis"] = f"{len(d.findings)} finding(s)" + (f", top {top}" if top else "")
        self.trial()

    def trial(self) -> None:
        diagnose = _filler("diagnosis")
        found = self.k.newest(diagnose.also, collect.read_trial, diagnose.name)
        for p in found.problems:
            self.problem(p)
        if found.value is None or found.run is None:
            return
        self.run = found.run
        t = found.value
        where = f"{shape_text(t.get('shape') or [])} {t.get('dtype') or ''}"
        self.add(Heading(3, f"Fix tried: {t['fix_id']} for {t['finding']}"))
        self.add(
            para(
                f"At {where}"
                + (f" on {t['gpu']}" if t.get("gpu") else "")
                + f", {run_text(found.run)}."
            )
        )
        rows = [_side_row("before", t["before"])]
        if t.get("after"):
            rows.append(_side_row("after", t["after"]))
        rows += [_side_row("peer", p) for p in t.get("peers") or []]
        self.add(table(("", "run", "ms", "correct"), rows))
        kept = (t.get("kept") or t["before"]).get("label")
        if t.get("speedup") is not None:
            self.add(para(f"Speed-up {t['speedup']:.2f}x; kept: ", Code(str(kept)), "."))
        else:
            self.add(para("No correct candidate was faster; kept: ", Code(str(kept)), "."))
        for ratio in diagview.peer_ratios(Trial.from_dict(t)):
            self.add(para(f"Kept vs {ratio}."))

    def history(self) -> None:
        runs, _ = self.k.runs(("bench",))  # a store problem was shown with the bench part
        trends = history.trend(history.points(runs))
        if not trends:
            self.cells["history"] = "-"
            self.not_run("bench", "", " (each bench run adds a point)")
            return
        self.add(
            para(
                "Bench times per case, oldest to newest; only runs on the same GPU model "
                "and Triton version are compared."
            )
        )
        self.add(table(history.TREND_HEADERS, [history.trend_row(t) for t in trends]))
        for t in trends:
            if t.regression:
                self.add(para(f"Regression: {t.regression.text}."))
        made = plots.trend(
            trends, f"{self.k.name}: median time per run", self.images.path("trend.png")
        )
        if not self.image(made, f"{self.k.name}: times across runs"):
            self.add(
                para(
                    "One bench run so far: run ",
                    Code(self.k.command("bench")),
                    " again to see a trend.",
                )
            )
        found = sum(1 for t in trends if t.regression)
        self.cells["history"] = f"{found} REGRESSION(S)" if found else "no regression"


BENCH_HEADERS = (*benchreport.TABLE_HEADERS[1:], "run")
FINDING_HEADERS = ("severity", "finding", "where", "title", "fix")
ALTERNATIVE_HEADERS = ("instead", "regs", "spill B", "occupancy %", "ms")
"""A config fix's alternatives, as `views.diagnosis` shows them."""


def _bench_row(rec: BenchRecord, run_id: str) -> tuple[str, ...]:
    if rec.status != "ok":
        blank = [""] * (len(BENCH_HEADERS) - 4)
        return (shape_text(rec.shape), rec.dtype, rec.status.upper(), *blank, run_id)
    return (
        shape_text(rec.shape),
        rec.dtype,
        benchreport.num(rec.ms, 4),
        benchreport.num(rec.gbps),
        benchreport.num(rec.tflops),
        benchreport.ratio(rec.roofline_ratio),
        benchreport.ratio(rec.vs_copy),
        rec.bound or "-",
        _speedup(rec.speedup_vs_torch),
        _speedup(rec.speedup_vs_compile),
        run_id,
    )


def _speedup(value: float | str | None) -> str:
    if isinstance(value, str):
        return "n/a"
    return "-" if value is None else f"{value:.2f}x"


def _alternative_row(a: dict) -> tuple[str, ...]:
    return (
        a.get("change") or a.get("label", ""),
        fmt(a.get("regs")),
        fmt(a.get("spill_bytes")),
        fmt(a.get("occupancy")),
        fmt(a.get("ms")),
    )


def _finding_row(f: dict) -> tuple[str, ...]:
    where = f"{os.path.basename(f['file'])}:{f['line']}" if f.get("file") and f.get("line") else ""
    return (f["severity"], f["id"], where, f["title"], f.get("fix") or "")


def _side_row(name: str, side: dict) -> tuple[str, ...]:
    correct = side.get("correct")
    return (
        name,
        side.get("label", ""),
        fmt(side.get("ms"), 4),
        "-" if correct is None else "yes" if correct else "NO",
    )
