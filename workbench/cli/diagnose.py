"""`workbench diagnose NAME`: every fact this machine can gather about a kernel (check, resources
of its config and of its neighbours, IR patterns, cache keys; on a GPU, timings, launch facts and
Nsight Compute), read against the pitfall table and ranked by what there is to gain; with
`--try FIX`, the fix applied, checked and measured beside the kernel as it is."""

from __future__ import annotations

import argparse
import sys

from workbench.app import start
from workbench.app.params import diagnose_options
from workbench.catalog.discovery import discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_command_options
from workbench.profilers import sanitizer
from workbench.run import store
from workbench.runtime.grammar import parse_shape
from workbench.views.diagnosis import diagnosis_text, trial_text
from workbench.views.text import print_json, print_problem, run_footer


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="findings ranked by gain, with fixes; --try applies one")
    p.add_argument("name")
    p.add_argument("--dtype", choices=DTYPES, help="default: the kernel's first")
    p.add_argument("--shape", help="the measured facts' shape (default: the first bench shape)")
    p.add_argument(
        "--gpu-facts",
        choices=("auto", "none"),
        default="auto",
        help="auto: time and profile when there is a GPU; none: static and checked facts only",
    )
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="REPORT",
        help="an .ncu-rep, ncu CSV, .nsys-rep or nsys .sqlite to read as facts (repeatable)",
    )
    p.add_argument(
        "--sanitize",
        choices=sanitizer.TOOLS,
        help="also run the check under this compute-sanitizer tool (GPU host; memcheck runs "
        "by itself when the check fails)",
    )
    p.add_argument("--try", dest="try_fix", metavar="FIX", help="a finding's id to apply and time")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per step")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    entry = discover(args.path).find(args.name)
    opts = diagnose_options(
        dtype=args.dtype,
        shape=list(parse_shape(args.shape)) if args.shape else None,
        gpu_facts=args.gpu_facts,
        imports=args.imports,
        timeout=args.timeout,
        sanitize=args.sanitize,
    )
    result = start.diagnose(entry, opts, args.try_fix, None if args.json else _step)
    if args.json:
        print_json(result.to_dict())
    else:
        print(diagnosis_text(result.diagnosis, entry.name, args.path))
        if result.trial:
            print("\n" + trial_text(result.trial))
    for problem in result.problems:
        if not args.json and problem not in store.unsaved():  # those are said as not saved
            print_problem(problem)
    print(run_footer(result.run_id, result.seconds, result.run_dir), file=sys.stderr)
    return 2 if args.try_fix and result.trial is None else 0


def _step(name: str, said: str, seconds: float) -> None:
    print(f"  {name:<10} {seconds:6.1f} s  {said}", file=sys.stderr)
