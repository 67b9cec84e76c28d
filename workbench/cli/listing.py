"""`workbench list`: the kernels found, what they declare, and what this machine can do."""

from __future__ import annotations

import argparse

from workbench.catalog.discovery import discover
from workbench.cli.options import add_command_options
from workbench.run import machine
from workbench.views.rows import KERNEL_HEADERS, kernel_row
from workbench.views.text import print_json, print_problem, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list kernels (reads sources; imports nothing)")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    catalog = discover(args.path)
    actions = machine.actions()
    # a --path that is not there is a usage error (2); a module that fails to load is listed
    status = 2 if any(p.source == "usage" for p in catalog.problems) else 0
    if args.json:
        print_json(
            {
                "mode": machine.mode(),
                "actions": actions,
                "kernels": [k.to_dict() for k in catalog.kernels],
                "problems": [p.to_dict() for p in catalog.problems],
            }
        )
        return status
    print(table(KERNEL_HEADERS, [kernel_row(k) for k in catalog.kernels]))
    can = [a for a, ok in actions.items() if ok]
    cannot = [a for a, ok in actions.items() if not ok]
    print(f"\nmode: {machine.mode()}; actions here: {', '.join(can)}")
    if cannot:
        print(f"need a GPU: {', '.join(cannot)}")
    for problem in catalog.problems:
        print_problem(problem, prefix="cannot load")
    return status
