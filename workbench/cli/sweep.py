"""`workbench sweep NAME`: every config of a kernel compiled in parallel, and on a GPU checked,
timed and ranked, each loser explained; Triton's own pick beside it; across shapes the smallest
config set to paste into @triton.autotune. Without a GPU (or for another --arch) the static
sweep (compile time, registers, spills, shared memory, occupancy) is the whole result.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from workbench.catalog.discovery import discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_arch_option, add_command_options
from workbench.run import machine
from workbench.runtime.errors import fail
from workbench.runtime.grammar import parse_shape
from workbench.sweep import analysis, cluster, plot, spread
from workbench.sweep.result import SweepResult
from workbench.sweep.space import SPACES, autotune_snippet
from workbench.views.sweep import HEADERS, rows_of, shared_text
from workbench.views.text import print_json, print_problem, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="autotune sweep: every config compiled, checked, timed")
    p.add_argument("name")
    p.add_argument("--shape", action="append", default=[], help="e.g. 4096x4096x4096 (repeat)")
    p.add_argument("--dtype", choices=DTYPES, help="input dtype (default: the kernel's first)")
    p.add_argument(
        "--space",
        default="own",
        help="own (its @triton.autotune configs), auto, neighbours (one step from the config it "
        "runs with), or a FILE",
    )
    p.add_argument("--jobs", type=int, help="parallel compiles (default: the CPU cores)")
    p.add_argument(
        "--gpus", help="all, or indices such as 0,1: one worker per GPU, all pulling from one queue"
    )
    p.add_argument(
        "--cluster",
        metavar="auto|local|ADDRESS",
        help="run the workers on a Ray cluster, one per GPU (one per host without GPUs): auto "
        "(the one running), local (started for this sweep) or its address; pip install -e '.[ray]'",
    )
    p.add_argument(
        "--no-triton-pick",
        dest="triton_pick",
        action="store_false",
        help="skip Triton's own autotuner beside the sweep (it times every config again)",
    )
    add_arch_option(p, "compile")
    p.add_argument("--resume", action="store_true", help="continue the newest sweep of NAME")
    p.add_argument("--config-timeout", type=float, default=120.0, help="seconds per config")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole sweep")
    add_command_options(p, run)


def params_from(args: argparse.Namespace) -> dict:
    named = args.space in SPACES
    space = args.space if named else os.path.abspath(args.space)
    if not named and not os.path.isfile(space):  # before any worker starts
        raise fail(
            "bad-arguments",
            f"--space {args.space}: no such file, and not one of {', '.join(SPACES)}",
            f"name a JSON or K=V,... file of configs, or use --space {'|'.join(SPACES)}",
            source="usage",
        )
    return {
        "shapes": [list(parse_shape(s)) for s in args.shape],
        "dtype": args.dtype,
        "space": space,
        "jobs": args.jobs,
        "arch": args.arch,
        "resume": spread.resume_file(args.name) if args.resume else None,
        "config_timeout": args.config_timeout,
        "triton_pick": args.triton_pick,
    }


def gpus_from(text: str | None) -> list[str]:
    if not text:
        return []
    if not machine.has_gpu():
        raise fail("needs-gpu", machine.needs_gpu_message("sweep --gpus"), "drop --gpus")
    return spread.all_gpus() if text == "all" else [g.strip() for g in text.split(",") if g]


def run(args: argparse.Namespace) -> int:
    entry = discover(args.path).find(args.name)
    params = params_from(args)
    progress = None if args.json else Progress()
    cancel = threading.Event()
    if args.cluster and args.gpus:
        raise fail(
            "bad-arguments",
            "--cluster and --gpus both name where the workers run",
            "drop --gpus: on a cluster every GPU gets a worker",
            source="usage",
        )
    try:
        if args.cluster:
            result, outcomes = cluster.run_sweep(
                entry, params, args.cluster, progress, cancel, args.timeout
            )
        else:
            result, outcomes = spread.run_sweep(
                entry, params, gpus_from(args.gpus), progress, cancel, args.timeout
            )
    except KeyboardInterrupt:  # the jobs keep what finished in their sweep.json
        cancel.set()
        raise
    if args.json:
        runs = [o.to_dict() for o in outcomes]
        print_json({"result": result.to_dict() if result else None, "runs": runs})
    elif result:
        show(result, args.path)
    for o in outcomes:
        if o.problem and not args.json:
            print_problem(o.problem)
    if result is None:
        return 2
    print(f"results (sweep.json, sweep.png when timed) in {outcomes[-1].run_dir}", file=sys.stderr)
    bad = sum(result.summary.get(k, 0) for k in analysis.FAILED)
    return 1 if bad or not result.complete else 0


class Progress:
    """configs done / total and an ETA, on stderr."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self, event: dict) -> None:
        if event.get("event") == "progress" and event.get("total"):
            done, total = event["done"], event["total"]
            spent = time.monotonic() - self.start
            eta = f"{spent / done * (total - done):.0f} s" if done else "-"
            print(f"  [{done}/{total}] ETA {eta}  {event['case']}", file=sys.stderr)
        elif event.get("event") == "config-timeout":
            print(f"  {event['label']} overran its time: resuming past it", file=sys.stderr)


def show(result: SweepResult, paths: list[str]) -> None:
    head = f"{result.kernel} {result.dtype or ''} on {result.gpu or result.arch}"
    print(f"{head} ({result.mode}, Triton {result.triton_version}, {result.jobs} jobs)")
    for shape, rows in analysis.by_shape(result.rows).items():
        print(f"\n{shape}" + (f"  ({shared_text(rows)})" if shared_text(rows) else ""))
        print(table(HEADERS, rows_of(rows)))
        info = result.shapes[shape]
        triton = info.get("triton")
        if triton:
            print(f"Triton's autotuner: {triton.get('label')} ({triton.get('seconds')} s)")
        for entry in result.persisted.get(shape, []):
            print(f"persisted autotune cache: {entry['label']} ({entry['file']})")
        if info.get("finding"):
            print(f"finding: {info['finding']}")
        unexplained = [r for r in rows if "no static reason" in r.get("why", "")]
        if unexplained:
            case = shape + (f":{result.dtype}" if result.dtype else "")
            where = "".join(f" --path {p}" for p in paths)
            print(
                f"profile one as it ran here: python -m workbench profile {result.kernel} "
                f"--case {case} --pin {unexplained[0]['label']}{where}"
            )
        if any(r["status"] == analysis.TIMED for r in rows):
            print("\n".join(plot.bars(rows)) + f"\n{plot.LEGEND}")
    chosen = result.minimal_set.get("configs")
    if chosen:
        print(f"\nsmallest set within 5% of each shape's best ({len(chosen)}):")
        print(autotune_snippet(chosen))
    for note in result.notes:
        print(f"note: {note}")
    print("\ntimings: " + ", ".join(f"{k} {v}" for k, v in result.timings.items()))
