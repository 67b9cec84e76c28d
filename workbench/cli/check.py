"""`workbench check NAME`: the kernel against its PyTorch reference, case by case."""

from __future__ import annotations

import argparse
import sys

from workbench.app import start
from workbench.app.params import check_params
from workbench.catalog.discovery import discover
from workbench.catalog.spec import DTYPES
from workbench.check.result import CaseResult, CheckReport
from workbench.cli.options import add_command_options
from workbench.profilers import sanitizer
from workbench.run import jobs
from workbench.runtime.errors import Problem
from workbench.views.rows import (
    CHECK_HEADERS,
    case_shape,
    check_row,
    check_verdict,
    sanitizer_lines,
)
from workbench.views.text import print_json, print_problem, print_run_end, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a kernel against its reference")
    p.add_argument("name")
    p.add_argument("--dtype", action="append", choices=DTYPES, help="repeatable; default: all")
    p.add_argument(
        "--shapes",
        action="append",
        metavar="SET",
        help="shape set(s) to run; a three-name module has 'check' (its get_inputs()) and "
        "'derived' (irregular sizes cut from them)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds (default 900)")
    p.add_argument(
        "--sanitize",
        choices=sanitizer.TOOLS,
        help="run the smallest cases under compute-sanitizer's tool (GPU host): accesses out "
        "of bounds, shared-memory races, uninitialised reads, barrier misuse",
    )
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    entry = discover(args.path).find(args.name)
    params = check_params(entry, args.dtype, args.shapes)
    progress = None if args.json else _progress
    outcome = start.check(entry, params, args.timeout, progress, sanitize=args.sanitize)
    return report(outcome, args.json)


def _progress(event: dict) -> None:
    if event.get("event") == "case":
        c = CaseResult.from_dict(event["case"])
        print(
            f"  {c.status:<7} {c.dtype:<9} {case_shape(c):<16} {c.layout}",
            file=sys.stderr,
        )


EXIT_CORRECT, EXIT_WRONG, EXIT_NOT_RUN, EXIT_WRONG_DERIVED = 0, 1, 2, 4  # 3: not saved (cli.main)


def report(outcome: jobs.Outcome, as_json: bool) -> int:
    """Print a check outcome; the exit status says correct (0), wrong on the given inputs (1),
    could not run (2), not saved (3), or right on the given inputs and wrong only on the cases
    derived from them (4)."""
    result = CheckReport.from_dict(outcome.result) if outcome.result else None
    if as_json:
        print_json(outcome.to_dict())
    elif result:
        print(table(CHECK_HEADERS, [check_row(c) for c in result.cases]))
        print("\n" + check_verdict(result))
        if result.sanitizer:
            print(sanitizer_lines(result.sanitizer))
        for problem in _case_problems(result.cases):
            print_problem(problem, prefix="case error")
    if outcome.problem and not as_json:
        print_problem(outcome.problem)
    print_run_end(outcome)
    if not result:
        return EXIT_NOT_RUN
    if result.correct:
        return EXIT_CORRECT
    return EXIT_WRONG_DERIVED if result.given_correct else EXIT_WRONG


def _case_problems(cases: list[CaseResult]) -> list[Problem]:
    """Each distinct error of the cases once, with the file:line the table has no room for."""
    found = {
        (c.problem["cause"], c.problem.get("file"), c.problem.get("line")): c.problem
        for c in cases
        if c.problem
    }
    return [Problem(**p) for p in found.values()]
