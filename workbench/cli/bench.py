"""`workbench bench NAME` / `bench --all`: time kernels against their references on this GPU.

Arguments and printing; the campaign itself (one child job per check and bench, the report
rewritten after each) is `bench.campaign`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from workbench.app.params import bench_params
from workbench.bench import campaign
from workbench.bench import report as benchreport
from workbench.bench.result import BenchRecord, Ceilings
from workbench.catalog.discovery import KernelEntry, discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_command_options
from workbench.run import machine, store
from workbench.run.params import BenchParams
from workbench.runtime.errors import fail
from workbench.runtime.grammar import parse_shape
from workbench.views import bench as bench_view
from workbench.views.text import print_json, print_problem, print_run_end, table


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
        "--graph",
        action="store_true",
        help="also count the launches of one call and time it replayed from one CUDA graph "
        "(checked): the fix for a launch-bound workload",
    )
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
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    shapes = [list(parse_shape(s)) for s in args.shape or []]
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
    catalog = discover(args.path)
    entry = None if args.all else catalog.find(args.name)  # an unknown name is said first
    if not machine.has_gpu():
        raise fail(
            "needs-gpu",
            machine.needs_gpu_message("bench"),
            "past results: `workbench history --kind bench`, or reports/<gpu>/README.md",
            source="usage",
        )
    params = bench_params(
        shapes,
        args.dtype,
        compile=not args.no_compile,
        launches=args.graph,
        refresh_ceilings=args.refresh_ceilings,
    )
    if entry is None:
        return _run_all(catalog.kernels, catalog.problems, params, args)
    return _run_one(entry, params, args)


def _run_one(entry: KernelEntry, params: BenchParams, args: argparse.Namespace) -> int:
    if args.out:
        benchreport.out_folder(args.out)  # a link in the way is refused before the bench runs
    doc = benchreport.new_doc()
    kernel = campaign.add_kernel(doc, entry)
    outcome = campaign.bench(entry, params, args.timeout, doc, kernel, _sayer(args))
    if args.out:
        _write(campaign.merged(Path(args.out), doc), args.out, quiet=args.json)
    records = [BenchRecord.from_dict(r) for r in doc["records"]]
    if args.json:
        print_json(outcome.to_dict())
    else:
        print(summary_table(records))
        if doc["ceilings"]:
            print("\n" + benchreport.ceilings_line(doc["ceilings"]))
            ceil = Ceilings.from_dict(doc["ceilings"])
            lines = [w for rec in records if (w := bench_view.work_line(rec, ceil))]
            if lines:
                print("work per call, each number with its source:\n  " + "\n  ".join(lines))
        if clocked := [c for rec in records if (c := bench_view.clock_line(rec))]:
            print("\n  ".join([bench_view.CLOCK_HEAD + ":", *clocked]))
        for line in filter(None, map(bench_view.unsteady_line, records)):
            print(line)
        for rec in records:
            if rec.status != "ok":
                print(f"  {rec.where}: {rec.reason}", file=sys.stderr)
        if outcome.problem:
            print_problem(outcome.problem)
    print_run_end(outcome)
    if not records:
        return 2
    return 0 if all(r.status == "ok" for r in records) else 1


def _run_all(
    entries: list[KernelEntry], problems: list, params: BenchParams, args: argparse.Namespace
) -> int:
    out = Path(args.out) if args.out else store.reports_dir() / "bench"
    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, _ctrl_c_cancels(cancel))
    try:
        doc = campaign.run_all(
            entries,
            problems,
            params,
            out,
            args.timeout,
            _sayer(args),
            resume=args.resume,
            redo=frozenset(args.redo or ()),
            cancel=cancel,
        )
    except KeyboardInterrupt:  # a second Ctrl-C
        if not args.json:
            print(f"interrupted; the report so far is in {out}", file=sys.stderr)
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    json_path, md_path = _write(doc, out, quiet=True)
    if args.json:
        print_json(doc)
    else:
        print(summary_table([BenchRecord.from_dict(r) for r in doc["records"]]))
        for problem in problems:
            print_problem(problem, prefix="cannot load")
        print(f"\nwrote {json_path} and {md_path}", file=sys.stderr)
    if doc.get("interrupted"):
        if not args.json:
            print(_resume_hint(doc, len(entries), out), file=sys.stderr)
        return 130
    if not doc["records"]:
        return 2
    return 0 if benchreport.is_clean(doc) else 1


def summary_table(records: list[BenchRecord]) -> str:
    """The bench table, and with --graph how each case launches."""
    text = table(("kernel", *bench_view.HEADERS), [(r.name, *bench_view.row(r)) for r in records])
    launched = [r for r in records if r.launch]
    if launched:
        rows = [(r.name, *bench_view.launch_row(r)) for r in launched]
        text += "\n\n" + table(("kernel", *bench_view.LAUNCH_HEADERS), rows)
    return text


def _write(doc: dict, out: str | Path, quiet: bool) -> tuple[Path, Path]:
    paths = benchreport.write(doc, out)
    if not quiet:
        print(f"wrote {paths[0]} and {paths[1]}", file=sys.stderr)
    return paths


def _sayer(args: argparse.Namespace) -> campaign.Say:
    """Progress lines on stderr, none with --json."""
    return (lambda text: None) if args.json else (lambda text: print(text, file=sys.stderr))


def _ctrl_c_cancels(cancel: threading.Event) -> Callable[[int, object], None]:
    """A SIGINT handler: the first Ctrl-C sets `cancel`, which kills the running job (its child
    runs in a process session of its own, which the terminal's Ctrl-C does not reach) and ends
    the campaign there; a second one interrupts at once. It prints nothing: a print inside a
    handler can land in the middle of another on the same stream."""

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        cancel.set()

    return stop


def _resume_hint(doc: dict, total: int, out: Path) -> str:
    finished = sum(bool(k.get("check") and k.get("bench")) for k in doc["kernels"])
    return (
        f"interrupted: {finished} of {total} kernel(s) finished, kept in {out}; "
        "to run the rest, run the same command with --resume"
    )
