"""A benchmark campaign (parent side, no torch): check and bench kernels one child job at a time
into a report document, rewriting bench.json and README.md after each job, so a kernel that
fails, crashes or hangs costs only its own rows; and one kernel's run merged into a saved report.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from workbench.bench import report
from workbench.bench.result import BenchRecord
from workbench.catalog.discovery import KernelEntry
from workbench.check.result import CheckReport
from workbench.run import jobs
from workbench.run.params import BenchParams, CheckParams
from workbench.runtime.errors import Problem, fail
from workbench.runtime.grammar import shape_text

Say = Callable[[str], None]


def run_all(
    entries: list[KernelEntry],
    problems: list[Problem],
    params: BenchParams,
    out: Path,
    timeout: float,
    say: Say,
    resume: bool = False,
    redo: frozenset[str] = frozenset(),
    cancel: threading.Event | None = None,
) -> dict:
    """Check and bench every entry into out's report and return it; `resume` keeps the kernels a
    saved report finished (but those in `redo`). `cancel` kills the running job and stops there,
    and Ctrl-C interrupts (re-raised): either marks the report interrupted, the finished kernels
    kept for a resume."""
    unknown = redo - {e.name for e in entries}
    if unknown:
        raise fail(
            "bad-arguments",
            f"--redo names no kernel here: {', '.join(sorted(unknown))}",
            "use names that `workbench list` shows",
        )
    report.out_folder(out)  # a link in the way is refused before any kernel runs
    doc = resumed(out, redo) if resume else report.new_doc()
    doc["problems"] = [p.to_dict() for p in problems]
    done = {k["name"] for k in doc["kernels"]}
    try:
        for n, entry in enumerate(entries, 1):
            if entry.name in done:
                say(f"[{n}/{len(entries)}] {entry.name}: done before, kept")
                continue
            if cancel is not None and cancel.is_set():
                doc["interrupted"] = True
                break
            say(f"[{n}/{len(entries)}] {entry.name}")
            if not _run_kernel(doc, entry, params, out, timeout, say, cancel):
                doc["interrupted"] = True
                break
    except KeyboardInterrupt:
        doc["interrupted"] = True
        report.write(doc, out)
        raise
    if doc.get("interrupted"):
        report.write(doc, out)
    return doc


def _run_kernel(
    doc: dict,
    entry: KernelEntry,
    params: BenchParams,
    out: Path,
    timeout: float,
    say: Say,
    cancel: threading.Event | None,
) -> bool:
    """Check and bench one kernel into doc, writing the report after each job; False when a job
    was cancelled (that kernel stays unfinished: a resume runs it again)."""
    kernel = add_kernel(doc, entry)
    checked = jobs.run_job(jobs.Job("check", entry, CheckParams(), timeout=timeout), cancel=cancel)
    if checked.status == "cancelled":
        say("  check: cancelled")
        return False
    kernel["check"] = check_summary(checked)
    say(f"  check: {kernel['check']['status']} {kernel['check']['reason']}")
    report.write(doc, out)
    if bench(entry, params, timeout, doc, kernel, say, cancel).status == "cancelled":
        say("  bench: cancelled")
        kernel["bench"] = None
        return False
    report.write(doc, out)
    return True


def resumed(out: Path, redo: frozenset[str] = frozenset()) -> dict:
    return _with_saved(
        out,
        lambda saved: report.resume(saved, redo),
        report.new_doc(),
        "resume from",
        "move that file away (or drop --resume) to start the report afresh",
    )


def merged(out: Path, doc: dict) -> dict:
    """doc joined to the report already in out (one kernel's rows replaced, the rest kept)."""
    return _with_saved(
        out,
        lambda saved: report.merge(saved, doc),
        doc,
        "update",
        "choose another --out, or move that file away to start a new report",
    )


def _with_saved(
    out: Path, use: Callable[[dict], dict], missing: dict, action: str, remedy: str
) -> dict:
    """use(the report saved in out), or `missing` where there is none; a report that cannot be
    read or used is a bad-report problem."""
    path = out / "bench.json"
    try:
        return use(json.loads(path.read_text()))
    except FileNotFoundError:
        return missing
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise fail("bad-report", f"cannot {action} {path}: {exc}", remedy, file=str(path)) from exc


def add_kernel(doc: dict, entry: KernelEntry) -> dict:
    kernel = {"name": entry.name, "file": _rel(entry.file), "check": None, "bench": None}
    doc["kernels"].append(kernel)
    return kernel


def bench(
    entry: KernelEntry,
    params: BenchParams,
    timeout: float,
    doc: dict,
    kernel: dict,
    say: Say,
    cancel: threading.Event | None = None,
) -> jobs.Outcome:
    """Run one bench job; its records join doc as they arrive (a timeout keeps those so far)."""

    def on_event(event: dict) -> None:
        kind = event.get("event")
        if kind == "ceilings":
            doc["ceilings"] = event["ceilings"]
            doc["device"] = event["ceilings"]["device"]
        elif kind == "record":
            doc["records"].append(event["record"])
            rec = BenchRecord.from_dict(event["record"])
            say(f"  {rec.status:<6} {rec.where}  {report.num(rec.ms, 4)} ms")
        elif kind == "progress" and event.get("case"):
            step = f"[{event['done'] + 1}/{event['total']}] " if "done" in event else ""
            say(f"  {step}{event['case']}")

    outcome = jobs.run_job(jobs.Job("bench", entry, params, timeout=timeout), on_event, cancel)
    kernel["bench"] = {
        "status": outcome.status,
        "run_id": outcome.run_id,
        "reason": outcome.problem.cause if outcome.problem else "",
    }
    return outcome


def check_summary(outcome: jobs.Outcome) -> dict:
    """A check job's outcome as the report keeps it: status, counts, the first failing case."""
    if not outcome.result:
        cause = outcome.problem.cause if outcome.problem else "no result"
        return {"status": outcome.status, "run_id": outcome.run_id, "reason": cause}
    result = CheckReport.from_dict(outcome.result)
    s = result.summary()
    counts = f"{s['passed']} passed, {s['failed']} failed, {s['errors']} errors"
    failed = [c for c in result.cases if c.status in ("failed", "error")]
    if failed:
        first = failed[0]
        counts += f"; first: {first.dtype} {shape_text(first.shape)} {first.layout}: {first.reason}"
    return {
        "status": "correct" if result.correct else "not correct",
        "run_id": outcome.run_id,
        "summary": s,
        "reason": "" if result.correct else counts,
    }


def _rel(file: str) -> str:
    path = Path(file)
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else file
