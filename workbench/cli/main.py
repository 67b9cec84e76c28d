"""Command line: every action of the workbench, headless, each with --json.

`python -m workbench` with no command opens the terminal UI.
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli import bench, check, history, ir, listing, profile, resources
from workbench.cli.options import add_path_option
from workbench.runtime.errors import WorkbenchError
from workbench.views.text import print_json, print_problem

# One module per command, each with add_parser(sub) and run(args).
COMMANDS = (listing, check, history, bench, profile, ir, resources)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Check, measure, read and profile Triton kernels."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tui = sub.add_parser("tui", help="open the terminal UI (the default)")
    add_path_option(tui)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in (None, "tui"):
        from workbench.tui.app import run_app

        return run_app(getattr(args, "path", []))
    try:
        return int(args.run(args))
    except WorkbenchError as exc:
        if getattr(args, "json", False):
            print_json({"error": exc.problem.to_dict()})
        else:
            print_problem(exc.problem)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
