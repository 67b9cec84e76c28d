"""`workbench launches NAME`: what kernel_fn launches for one input, each launch's function and
grid, nothing compiled or run."""

from __future__ import annotations

import argparse

from workbench.app import start
from workbench.app.params import launches_params
from workbench.catalog.discovery import discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_command_options
from workbench.ir.result import LaunchesResult
from workbench.runtime.grammar import parse_shape
from workbench.views.text import print_json, print_problem, print_run_end, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("launches", help="what kernel_fn launches: functions and grids")
    p.add_argument("name")
    p.add_argument("--dtype", choices=DTYPES, help="input dtype (default: the kernel's first)")
    p.add_argument("--shape", help="input shape (default: the first check shape)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds (default 900)")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    shape = list(parse_shape(args.shape)) if args.shape else None
    params = launches_params(args.dtype, shape)
    entry = discover(args.path).find(args.name)
    outcome = start.job("launches", entry, params, args.timeout)
    if args.json:
        print_json(outcome.to_dict())
    elif outcome.result:
        result = LaunchesResult.from_dict(outcome.result)
        rows = [(x.name, x.programs, "yes" if x.tuned else "no") for x in result.launches]
        print(table(("function", "programs", "autotuned"), rows))
    if outcome.problem and not args.json:
        print_problem(outcome.problem)
    print_run_end(outcome)
    return 0 if outcome.result else 2
