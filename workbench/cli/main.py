"""Command line: every action of the workbench, headless, each with --json.

`python -m workbench` with no command opens the terminal UI.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from workbench.cli.options import add_path_option
from workbench.runtime.errors import WorkbenchError
from workbench.views.text import print_json, print_problem

COMMANDS = (
    "listing", "check", "history", "bench", "profile", "ir", "resources", "cache", "sweep",
    "diagnose", "report",
)  # fmt: skip
"""One module per command under workbench.cli, each with add_parser(sub) and run(args);
imported when the parser is built, so opening the UI does not wait for them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench", description="Check, measure, read and profile Triton kernels."
    )
    # Before the command too (`workbench --path DIR` opens the TUI on DIR); a subcommand's own
    # --path default would overwrite it if both wrote one attribute.
    add_path_option(parser, dest="leading_path")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tui = sub.add_parser("tui", help="open the terminal UI (the default)")
    add_path_option(tui)
    for name in COMMANDS:
        importlib.import_module(f"workbench.cli.{name}").add_parser(sub)
    return parser


def ui_paths(argv: list[str]) -> list[str] | None:
    """The --path values when the command line asks for the UI alone (nothing, or `tui`, and
    --path options): the UI then opens without building the parser. None: anything else."""
    paths: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--path" and (value := next(args, None)) is not None:
            paths.append(value)
        elif arg.startswith("--path="):
            paths.append(arg.split("=", 1)[1])
        elif arg != "tui":
            return None
    return paths


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if (paths := ui_paths(argv)) is not None:
        from workbench.tui.app import run_app

        return run_app(paths)
    parser = build_parser()
    args = parser.parse_args(argv)
    paths = [*args.leading_path, *getattr(args, "path", [])]
    if args.command in (None, "tui"):
        from workbench.tui.app import run_app

        return run_app(paths)
    if args.leading_path and not hasattr(args, "path"):
        parser.error(f"`{args.command}` takes no --path")
    args.path = paths
    from workbench.run import jobs  # not at the top: the UI opens without it

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminated)
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return code
    except WorkbenchError as exc:
        if getattr(args, "json", False):
            print_json({"error": exc.problem.to_dict()})
        else:
            print_problem(exc.problem)
        return 2
    except KeyboardInterrupt:
        jobs.stop_all()
        return 130
    except BrokenPipeError:
        # The reader left (`| head`): nothing more can be shown. Python's own flush at exit
        # would fail again, so stdout goes to devnull; 141 is 128 + SIGPIPE, what a tool killed
        # by the closed pipe reports, and none of the statuses that say what a command found.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (`timeout`, a CI runner, `kill`) or SIGHUP (the terminal closed): stop the jobs,
    then exit as the signal would."""
    from workbench.run import jobs

    jobs.stop_all()
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
