"""`workbench sweep NAME`: every config of a kernel compiled in parallel, and on a GPU checked,
timed and ranked, each loser explained; Triton's own pick beside it; across shapes the smallest
config set to paste into @triton.autotune and the shapes that can share a key bucket. Without a
GPU (or for another --arch) the static sweep (compile time, registers, spills, shared memory,
occupancy) is the whole result. `--strategy` times only what a search strategy picks;
`sweep replay SWEEP_JSON` runs strategies against a recorded sweep, with no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from workbench.app import start
from workbench.app.params import sweep_params
from workbench.catalog.discovery import discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_arch_option, add_command_options
from workbench.runtime.errors import fail
from workbench.runtime.grammar import parse_shape
from workbench.sweep import analysis, plot, replay
from workbench.sweep.result import SweepResult
from workbench.sweep.space import autotune_snippet
from workbench.sweep.strategy import STRATEGIES, Budget, parse_budget
from workbench.views.sweep import (
    HEADERS,
    bucket_lines,
    replay_lines,
    rows_of,
    strategy_line,
)
from workbench.views.text import print_json, print_problem, table

REPLAY = "replay"
"""`sweep replay SWEEP_JSON`: the word that takes the place of a kernel's NAME."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="autotune sweep: every config compiled, checked, timed",
        description="sweep NAME [options] | sweep replay SWEEP_JSON [--strategy S[,S]|all] "
        "[--budget N|Ns] [--seeds N]",
    )
    p.add_argument("name", help="the kernel, or `replay` followed by a recorded sweep.json")
    p.add_argument("file", nargs="?", help=argparse.SUPPRESS)
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
    p.add_argument(
        "--strategy",
        help=f"which configs to time: {'|'.join(STRATEGIES)} (default exhaustive; replay: all, "
        "or several joined by commas)",
    )
    p.add_argument(
        "--budget",
        help="timings (40) or seconds (30s, 2m) a strategy may spend (default: a quarter of "
        "the space; replay: the whole space)",
    )
    p.add_argument("--seed", type=int, default=0, help="the random strategies' seed")
    p.add_argument("--seeds", type=int, help="replay: seeds 0..N-1 (default 20)")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    if args.name == REPLAY:
        return run_replay(args)
    if args.file:
        raise fail(
            "bad-arguments",
            f"unexpected {args.file}",
            "give one kernel NAME, or `sweep replay SWEEP_JSON`",
            source="usage",
        )
    entry = discover(args.path).find(args.name)
    params = sweep_params(
        args.name,
        space=args.space,
        strategy=args.strategy,
        budget=args.budget,
        seed=args.seed,
        seeds=args.seeds,
        shapes=[list(parse_shape(s)) for s in args.shape],
        dtype=args.dtype,
        jobs=args.jobs,
        arch=args.arch,
        resume=args.resume,
        config_timeout=args.config_timeout,
        triton_pick=args.triton_pick,
    )
    progress = None if args.json else Progress()
    cancel = threading.Event()
    try:
        result, outcomes = start.sweep(
            entry, params, progress, cancel, args.timeout, args.gpus, args.cluster
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


def run_replay(args: argparse.Namespace) -> int:
    """Strategies against a recorded exhaustive sweep: no job, no GPU."""
    if not args.file:
        raise fail(
            "bad-arguments",
            "sweep replay needs a recorded sweep",
            "sweep replay SWEEP_JSON [--strategy S] (a sweep.json from a run folder, or the "
            "output of `sweep NAME --json`)",
            source="usage",
        )
    names = STRATEGIES if args.strategy in (None, "all") else args.strategy.split(",")
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or (args.seeds is not None and args.seeds < 1):
        cause = f"--strategy {args.strategy}" if unknown else f"--seeds {args.seeds}"
        raise fail(
            "bad-arguments",
            f"{cause}: not a strategy list" if unknown else f"{cause}: fewer than one seed",
            f"--strategy all, or some of {','.join(STRATEGIES)} joined by commas; --seeds >= 1",
            source="usage",
        )
    try:
        data = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not JSON ({exc})"
        raise fail(
            "bad-replay",
            f"cannot read the sweep: {why}",
            "give a sweep.json from a run folder, or the output of `sweep NAME --json`",
            file=args.file,
            source="usage",
        ) from exc
    result = replay.read(data, args.file)
    seeds = 20 if args.seeds is None else args.seeds
    budget = parse_budget(args.budget) if args.budget else Budget()
    report = replay.replay(result, args.file, names, budget, seeds)
    if args.json:
        print_json(report)
    else:
        print("\n".join(replay_lines(report)))
    return 0


class Progress:
    """configs done / total and an ETA, on stderr."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self, event: dict) -> None:
        if event.get("event") == "progress" and event.get("total"):
            done, total = event["done"], event["total"]
            spent = time.monotonic() - self.start
            eta = f"{spent / done * (total - done):.0f} s" if done else "-"
            case = event.get("case") or ""
            said = f"  {case}" if case not in ("", "-") else ""  # nothing started yet: no name
            print(f"  [{done}/{total}] ETA {eta}{said}", file=sys.stderr)
        elif event.get("event") == "config-timeout":
            print(f"  {event['label']} overran its time: resuming past it", file=sys.stderr)


def show(result: SweepResult, paths: list[str]) -> None:
    head = f"{result.kernel} {result.dtype or ''} on {result.gpu or result.arch}"
    print(f"{head} ({result.mode}, Triton {result.triton_version}, {result.jobs} jobs)")
    for shape, rows in analysis.by_shape(result.rows).items():
        shared = plot.shared_text(rows)
        print(f"\n{shape}" + (f"  ({shared})" if shared else ""))
        print(table(HEADERS, rows_of(rows)))
        info = result.shapes[shape]
        triton = info.get("triton")
        if triton:
            print(f"Triton's autotuner: {triton.get('label')} ({triton.get('seconds')} s)")
        for entry in result.persisted.get(shape, []):
            print(f"persisted autotune cache: {entry['label']} ({entry['file']})")
        if info.get("finding"):
            print(f"finding: {info['finding']}")
        if info.get("profile"):  # the loser the static model leaves the most of unexplained
            case = shape + (f":{result.dtype}" if result.dtype else "")
            where = "".join(f" --path {p}" for p in paths)
            print(
                f"profile the largest unexplained gap as it ran here: python -m workbench "
                f"profile {result.kernel} --case {case} --pin {info['profile']}{where}"
            )
        if result.strategy:
            print(strategy_line(result.strategy, shape))
        if any(r["status"] == analysis.TIMED for r in rows):
            print("\n".join(plot.bars(rows)) + f"\n{plot.LEGEND}")
    chosen = result.minimal_set.get("configs")
    if chosen:
        print(f"\nsmallest set within 5% of each shape's best ({len(chosen)}):")
        print(autotune_snippet(chosen))
    for line in bucket_lines(result.buckets):
        print(line)
    for note in result.notes:
        print(f"note: {note}")
    print("\ntimings: " + ", ".join(f"{k} {v}" for k, v in result.timings.items()))
