"""`workbench profile NAME --tool ncu|nsys`, and `workbench profile --import FILE` (any machine)."""

from __future__ import annotations

import argparse
import sys
import textwrap
import threading
import time
from typing import TYPE_CHECKING

from workbench.app import start
from workbench.app.params import profile_request
from workbench.catalog.discovery import KernelEntry, discover
from workbench.cli.options import add_command_options
from workbench.runtime.errors import fail
from workbench.views import rows as views
from workbench.views.text import fmt, print_json, print_problem, run_footer, table

if TYPE_CHECKING:
    from workbench.profilers.session import ProfileRun, Request
    from workbench.run.jobs import OnEvent


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="profile a kernel with ncu or nsys around its NVTX range, or read a saved report",
    )
    p.add_argument(
        "name",
        nargs="?",
        help="kernel to profile; with --import, the kernel to record the report under "
        "(default: the kernels its workbench NVTX ranges name)",
    )
    p.add_argument("--tool", choices=("ncu", "nsys"), default="ncu")
    p.add_argument(
        "--preset",
        choices=("quick", "memory", "full"),
        default="quick",
        help="ncu sections: quick (default), memory, or full (--set full)",
    )
    p.add_argument("--metrics", default="", help="extra ncu metrics, comma-separated")
    p.add_argument(
        "--case",
        "--config",  # the old name, kept working: `ir --config` means K=V compile settings
        dest="cases",
        action="append",
        default=[],
        metavar="SHAPE[:DTYPE]",
        help="e.g. 4096x1024:float16 (repeatable; default: the first bench shape); "
        "--config is its deprecated name",
    )
    p.add_argument(
        "--pin",
        metavar="K=V,...",
        help="profile this one config (constexprs and num_warps/num_stages), e.g. a sweep's loser",
    )
    p.add_argument("--warmup", type=int, default=2, help="calls before the range (default 2)")
    p.add_argument("--repeats", type=int, help="calls inside the range (ncu 1, nsys 10)")
    p.add_argument("--launch-count", type=int, help="most kernel launches ncu profiles")
    p.add_argument(
        "--all-kernels",
        action="store_true",
        help="profile every kernel in the range, not only the spec's Triton kernels",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds (default 900)")
    p.add_argument("--import", dest="import_file", metavar="FILE", help="read a saved report")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    from workbench.diagnosis import diagnose_profile
    from workbench.profilers import saved, session

    if args.import_file:
        if args.name:  # an unknown NAME is refused before the report is read
            discover(args.path).find(args.name)
        result = diagnose_profile(session.import_file(args.import_file))
        if result.get("tool") == "ncu":
            _refuse_other_kernel(result, args.name)
            saved.record_import(result, args.import_file, args.name)
        if args.json:
            print_json(result)
        else:
            show(result)
            for rec in result.get("recorded", []):
                print(f"recorded as run {rec['run_id']} of {rec['kernel']}", file=sys.stderr)
            for note in result.get("notes", []):
                print(f"note: {note}", file=sys.stderr)
        return 0
    if not args.name:
        raise fail("no-kernel", "no kernel named", "give a kernel name or --import FILE")
    entry = discover(args.path).find(args.name)
    req = profile_request(
        cases=args.cases,
        pin=args.pin,
        tool=args.tool,
        preset=args.preset,
        metrics=args.metrics,
        warmup=args.warmup,
        repeats=args.repeats,
        launch_count=args.launch_count,
        all_kernels=args.all_kernels,
        timeout=args.timeout,
    )
    profile_run = _run_cancellable(entry, req, None if args.json else _progress)
    if args.json:
        print_json(profile_run.to_dict())
    else:
        for note in profile_run.notes:
            print(f"note: {note}", file=sys.stderr)
        if profile_run.summary:
            show(profile_run.summary)
        if profile_run.problem:
            print_problem(profile_run.problem)
        done, tool = profile_run.outcome, profile_run.tool
        extra = f", {tool.name} {tool.version}"
        print(run_footer(done.run_id, done.seconds, done.run_dir, extra), file=sys.stderr)
    if profile_run.summary is None:
        return 2
    return 1 if profile_run.problem else 0


def _refuse_other_kernel(result: dict, name: str | None) -> None:
    """NAME files the report under that kernel; a report whose workbench ranges
    (`<kernel>:<shape>`) name other kernels would be filed under the wrong one."""
    ranges = [k.get("range") or "" for k in result["kernels"]]
    named = sorted({r.split(":", 1)[0] for r in ranges if ":" in r})
    if name and named and name not in named:
        raise fail(
            "report-of-another-kernel",
            f"{result['file']}: its NVTX ranges name {', '.join(named)}, not {name!r}",
            f"leave NAME out to file it under {', '.join(named)}, or import the report of {name}",
            source="usage",
        )


def _run_cancellable(entry: KernelEntry, req: Request, on_event: OnEvent | None) -> ProfileRun:
    """Ctrl-C cancels the profiler and its child (they run in a process session of their own).

    The main thread only sleeps: an interrupted `Thread.join` can leave the thread looking
    finished while it still runs, so completion is signalled with an Event instead.
    """
    cancel, done = threading.Event(), threading.Event()
    box: dict = {}

    def work() -> None:
        try:
            box["run"] = start.profile(entry, req, on_event, cancel)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, daemon=True).start()
    while not done.is_set():
        try:
            time.sleep(0.1)
        except KeyboardInterrupt:
            if not cancel.is_set():
                print("cancelling...", file=sys.stderr)
            cancel.set()
    if "error" in box:
        raise box["error"]
    return box["run"]


def _progress(event: dict) -> None:
    kind = event.get("event")
    if kind == "tool":
        print(f"  {event['line']}", file=sys.stderr)
    elif kind == "phase":
        phase = event.get("phase")
        if phase == "warmup":
            print(f"warm-up (compile, autotune) for {event['range']}", file=sys.stderr)
        elif phase == "range":
            print(f"range {event['range']}: {event['repeats']} call(s)", file=sys.stderr)
        elif phase == "waiting":
            print(f"waiting: {event['why']}", file=sys.stderr)


def show(result: dict) -> None:
    if result.get("tool") == "nsys":
        _show_nsys(result)
    else:
        _show_ncu(result)


def _show_ncu(result: dict) -> None:
    print(table(views.PROFILE_HEADERS, views.profile_rows(result)))
    print("\nmeasured findings:")
    print(textwrap.indent(views.measured_finding_lines(result), "  "))
    rules = views.rule_rows(result)
    if rules:
        print("\nncu rules:")
        print(textwrap.indent(table(views.RULE_HEADERS, rules), "  "))
    lines = views.hot_line_rows(result, per_launch=5)
    if lines:
        print("\nhot lines:")
        print(textwrap.indent(table(views.LINE_HEADERS, lines), "  "))
    print(f"\n{result['launches']} launch(es), {result['metrics']} metrics; {result['file']}")
    print(f"read with {result['reader']}")


def _show_nsys(result: dict) -> None:
    rows = [
        (r["range"], r["instances"], fmt(r["cpu_total_ns"] / 1e3), r["kernels"])
        + (fmt(r["gpu_busy_ns"] / 1e3), fmt(r["gap_avg_ns"]), fmt(r["gpu_idle_pct"]))
        for r in result["ranges"]
    ]
    headers = ("range", "n", "cpu us", "kernels", "gpu us", "avg gap ns", "idle%")
    print(table(headers, rows))
    print()
    rows = [
        (k["name"], k["instances"], fmt(k["total_ns"] / 1e3), fmt(k["avg_ns"] / 1e3))
        + (fmt(k["time_pct"]),)
        for k in result["kernels"]
    ]
    print(table(("kernel", "launches", "total us", "avg us", "time%"), rows))
    print(f"\n{result['kernel_launches']} kernel launches; {result['file']}")
