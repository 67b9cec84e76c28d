"""`workbench bench NAME` / `bench --all`: time kernels against their references on this GPU.

`--all` checks and benchmarks every kernel of the catalog, one child process per job, and
rewrites bench.json and README.md in --out after each job, so a kernel that fails, crashes or
hangs costs only its own rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from workbench.bench import report as benchreport
from workbench.bench.report import num, ratio, shape_text
from workbench.catalog.discovery import KernelEntry, discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_json_option, add_path_option
from workbench.run import jobs, machine, store
from workbench.runtime.errors import fail
from workbench.views.text import print_json, print_problem, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="time a kernel: median ms, GB/s, TFLOP/s, roofline, speedups")
    p.add_argument("name", nargs="?", help="the kernel (see `list`); or --all")
    p.add_argument(
        "--all", action="store_true", help="check and bench every kernel; write a report"
    )
    p.add_argument(
        "--shape",
        action="append",
        metavar="DIMS",
        help="e.g. 4096x4096 (repeatable); default: the kernel's bench shapes",
    )
    p.add_argument("--dtype", action="append", choices=DTYPES, help="repeatable; default: all")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument(
        "--refresh-ceilings", action="store_true", help="measure copy and matmul ceilings again"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write bench.json and README.md here; with one kernel, its rows replace theirs in "
        "the report already there and the rest is kept",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="with --all: keep the kernels --out's bench.json finished; run the rest",
    )
    p.add_argument(
        "--redo",
        action="append",
        metavar="NAME",
        help="with --resume: run this kernel again even if it finished (repeatable)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per job (default 900)")
    add_path_option(p)
    add_json_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    shapes = [list(benchreport.parse_shape(s)) for s in args.shape or []]
    if args.all == bool(args.name):
        raise fail(
            "bad-arguments",
            "bench takes one kernel name or --all" + (", not both" if args.all else ""),
            "run `workbench bench NAME` or `workbench bench --all`",
        )
    if args.resume and not args.all:
        raise fail("bad-arguments", "--resume goes with --all", "add --all, or drop --resume")
    if args.redo and not args.resume:
        raise fail(
            "bad-arguments",
            "--redo picks kernels to run again in a resumed report",
            "add --all --resume, or drop --redo",
        )
    if args.all and shapes:
        raise fail(
            "bad-arguments",
            "--shape applies to one kernel, and --all benchmarks many",
            "drop --shape (each kernel's bench shapes are used), or name one kernel",
        )
    if not machine.has_gpu():
        raise fail(
            "needs-gpu",
            machine.needs_gpu_message("bench"),
            "past results: `workbench history --kind bench`, or reports/<gpu>/README.md",
        )
    params = {
        "shapes": shapes or None,
        "dtypes": args.dtype,
        "compile": not args.no_compile,
        "refresh_ceilings": args.refresh_ceilings,
    }
    catalog = discover(args.path)
    if args.all:
        return _run_all(catalog.kernels, catalog.problems, params, args)
    return _run_one(catalog.find(args.name), params, args)


def _run_one(entry: KernelEntry, params: dict, args: argparse.Namespace) -> int:
    doc = benchreport.new_doc()
    outcome = _bench(entry, params, args, doc, _add_kernel(doc, entry))
    if args.out:
        _write(_merged(Path(args.out), doc), args.out, quiet=args.json)
    if args.json:
        print_json(outcome.to_dict())
    else:
        print(summary_table(doc["records"]))
        if doc["ceilings"]:
            print("\n" + benchreport.ceilings_line(doc["ceilings"]))
        for rec in doc["records"]:
            if rec["status"] != "ok":
                print(f"  {_where(rec)}: {rec.get('reason')}", file=sys.stderr)
        if outcome.problem:
            print_problem(outcome.problem)
    _footer(outcome)
    if not doc["records"]:
        return 2
    if outcome.store_problem:
        return 3
    return 0 if all(r["status"] == "ok" for r in doc["records"]) else 1


def _run_all(
    entries: list[KernelEntry], problems: list, params: dict, args: argparse.Namespace
) -> int:
    out = Path(args.out) if args.out else store.reports_dir() / "bench"
    unknown = set(args.redo or ()) - {e.name for e in entries}
    if unknown:
        raise fail(
            "bad-arguments",
            f"--redo names no kernel here: {', '.join(sorted(unknown))}",
            "use names that `workbench list` shows",
        )
    doc = _resumed(out, frozenset(args.redo or ())) if args.resume else benchreport.new_doc()
    doc["problems"] = [p.to_dict() for p in problems]
    done = {k["name"] for k in doc["kernels"]}
    try:
        for n, entry in enumerate(entries, 1):
            if entry.name in done:
                _say(args, f"[{n}/{len(entries)}] {entry.name}: done before, kept")
                continue
            _say(args, f"[{n}/{len(entries)}] {entry.name}")
            kernel = _add_kernel(doc, entry)
            checked = jobs.run_job(jobs.Job("check", entry, {}, timeout=args.timeout))
            kernel["check"] = _check_summary(checked)
            _say(args, f"  check: {kernel['check']['status']} {kernel['check']['reason']}")
            _write(doc, out, quiet=True)
            _bench(entry, params, args, doc, kernel)
            _write(doc, out, quiet=True)
    except KeyboardInterrupt:
        doc["interrupted"] = True
        _write(doc, out, quiet=args.json)
        raise
    json_path, md_path = _write(doc, out, quiet=True)
    if args.json:
        print_json(doc)
    else:
        print(summary_table(doc["records"]))
        for problem in problems:
            print_problem(problem, prefix="cannot load")
        print(f"\nwrote {json_path} and {md_path}", file=sys.stderr)
    if not doc["records"]:
        return 2
    return 0 if benchreport.is_clean(doc) else 1


def _resumed(out: Path, redo: frozenset[str] = frozenset()) -> dict:
    return _with_saved(
        out,
        lambda saved: benchreport.resume(saved, redo),
        benchreport.new_doc(),
        "resume from",
        "move that file away (or drop --resume) to start the report afresh",
    )


def _merged(out: Path, doc: dict) -> dict:
    """doc joined to the report already in out (one kernel's rows replaced, the rest kept)."""
    return _with_saved(
        out,
        lambda saved: benchreport.merge(saved, doc),
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


def _add_kernel(doc: dict, entry: KernelEntry) -> dict:
    kernel = {"name": entry.name, "file": _rel(entry.file), "check": None, "bench": None}
    doc["kernels"].append(kernel)
    return kernel


def _bench(
    entry: KernelEntry, params: dict, args: argparse.Namespace, doc: dict, kernel: dict
) -> jobs.Outcome:
    """Run one bench job; its records join doc as they arrive (a timeout keeps those so far)."""

    def on_event(event: dict) -> None:
        kind = event.get("event")
        if kind == "ceilings":
            doc["ceilings"] = event["ceilings"]
            doc["device"] = event["ceilings"]["device"]
        elif kind == "record":
            doc["records"].append(event["record"])
            rec = event["record"]
            _say(args, f"  {rec['status']:<6} {_where(rec)}  {num(rec.get('ms'), 4)} ms")
        elif kind == "progress" and event.get("case"):
            step = f"[{event['done'] + 1}/{event['total']}] " if "done" in event else ""
            _say(args, f"  {step}{event['case']}")

    outcome = jobs.run_job(jobs.Job("bench", entry, params, timeout=args.timeout), on_event)
    kernel["bench"] = {
        "status": outcome.status,
        "run_id": outcome.run_id,
        "reason": outcome.problem.cause if outcome.problem else "",
    }
    return outcome


def _check_summary(outcome: jobs.Outcome) -> dict:
    result = outcome.result
    if not result:
        cause = outcome.problem.cause if outcome.problem else "no result"
        return {"status": outcome.status, "run_id": outcome.run_id, "reason": cause}
    s = result["summary"]
    counts = f"{s['passed']} passed, {s['failed']} failed, {s['errors']} errors"
    failed = [c for c in result["cases"] if c["status"] in ("failed", "error")]
    reason = counts + (f"; first: {_case_text(failed[0])}" if failed else "")
    return {
        "status": "correct" if result["correct"] else "not correct",
        "run_id": outcome.run_id,
        "summary": s,
        "reason": "" if result["correct"] else reason,
    }


def _case_text(case: dict) -> str:
    return f"{case['dtype']} {shape_text(case['shape'])} {case['layout']}: {case['reason']}"


def summary_table(records: list[dict]) -> str:
    rows = [
        (
            r["name"],
            shape_text(r["shape"]),
            r["dtype"],
            r["status"],
            num(r.get("ms"), 4),
            num(r.get("gbps")),
            num(r.get("tflops")),
            ratio(r.get("roofline_ratio")),
            ratio(r.get("speedup_vs_torch")),
            _compile_cell(r.get("speedup_vs_compile")),
        )
        for r in records
    ]
    headers = ("kernel", "shape", "dtype", "status", "ms", "GB/s", "TFLOP/s", "roofline")
    return table((*headers, "vs torch", "vs compile"), rows)


def _compile_cell(value: float | str | None) -> str:
    return value if isinstance(value, str) else ratio(value)


def _where(rec: dict) -> str:
    return f"{rec['name']} {rec['dtype']} {shape_text(rec['shape'])}"


def _write(doc: dict, out: str | Path, quiet: bool) -> tuple[Path, Path]:
    paths = benchreport.write(doc, out)
    if not quiet:
        print(f"wrote {paths[0]} and {paths[1]}", file=sys.stderr)
    return paths


def _rel(file: str) -> str:
    path = Path(file)
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else file


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.json:
        print(text, file=sys.stderr)


def _footer(outcome: jobs.Outcome) -> None:
    if outcome.store_problem:
        print_problem(outcome.store_problem, prefix="not saved")
    print(
        f"run {outcome.run_id} ({outcome.seconds:.1f} s); artifacts in {outcome.run_dir}",
        file=sys.stderr,
    )
