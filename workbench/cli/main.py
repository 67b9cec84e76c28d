"""Command line: every action of the workbench, headless, each with --json.

`python -m workbench` with no command opens the terminal UI.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import NoReturn

from workbench.cli.options import add_path_option
from workbench.runtime.errors import Problem, WorkbenchError
from workbench.views.text import escaped_output, print_json, print_problem

MODULES = {
    "list": "listing", "check": "check", "history": "history", "bench": "bench",
    "profile": "profile", "ir": "ir", "resources": "resources", "cache": "cache",
    "sweep": "sweep", "diagnose": "diagnose", "report": "report",
}  # fmt: skip
"""Each command's module under workbench.cli, with add_parser(sub) and run(args); imported when
the parser is built, so opening the UI does not wait for them, and only the one named when a
command is (the others' imports are a tenth of a second before a sweep can start its worker)."""


class _Parser(argparse.ArgumentParser):
    """Argument errors said as every other error is: `error (usage)`, the cause, the remedy.
    The command parsers are made of this class too (argparse gives them their parent's)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        remedy = f"see `{self.prog} --help`"
        print_problem(Problem("bad-arguments", message, remedy, source="usage"))
        raise SystemExit(2)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """Every command's parser; the named command's alone where `argv` names one."""
    named = _command(argv or [])
    parser = _Parser(
        prog="workbench", description="Check, measure, read and profile Triton kernels."
    )
    # Before the command too (`workbench --path DIR` opens the TUI on DIR); a subcommand's own
    # --path default would overwrite it if both wrote one attribute.
    add_path_option(parser, dest="leading_path")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tui = sub.add_parser("tui", help="open the terminal UI (the default)")
    add_path_option(tui)
    for name in [MODULES[named]] if named else MODULES.values():
        importlib.import_module(f"workbench.cli.{name}").add_parser(sub)
    return parser


def _command(argv: list[str]) -> str | None:
    """The command `argv` names before anything else but --path options; None if none."""
    args = iter(argv)
    for arg in args:
        if arg == "--path":
            next(args, None)
        elif not arg.startswith("--path="):
            return arg if arg in MODULES else None
    return None


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
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    paths = [*args.leading_path, *getattr(args, "path", [])]
    if args.command in (None, "tui"):
        from workbench.tui.app import run_app

        return run_app(paths)
    if args.leading_path and not hasattr(args, "path"):
        parser.error(f"`{args.command}` takes no --path")
    args.path = paths
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminated)
    with escaped_output():  # a kernel's name or message cannot drive the terminal
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, its errors printed, its end said by the exit status."""
    from workbench.run import jobs, store  # not at the top: the UI opens without them

    before = len(store.unsaved())
    _RUNNING[:] = [args.command]  # what a signal's last words name
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return not_saved(code, store.unsaved()[before:])
    except WorkbenchError as exc:
        if getattr(args, "json", False):
            print_json({"error": exc.problem.to_dict()})
        else:
            print_problem(exc.problem)
        return NOT_SAVED if isinstance(exc, store.NotSaved) else 2
    except KeyboardInterrupt:
        jobs.stop_all()
        _say_stopped("Ctrl-C", args.command)
        return 130
    except BrokenPipeError:
        # The reader left (`| head`): nothing more can be shown. Python's own flush at exit
        # would fail again, so stdout goes to devnull; 141 is 128 + SIGPIPE, what a tool killed
        # by the closed pipe reports, and none of the statuses that say what a command found.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


NOT_SAVED = 3
"""The exit status of a command whose result the store could not keep (it is still printed)."""
VERDICTS = (0, 1, 4)
"""Statuses that say what a command found (4: check right on the given inputs only)."""


def not_saved(code: int, missed: list[Problem]) -> int:
    """The one rule for every command that stores: the writes the store could not make (runs,
    run folders, an imported report) are said on stderr, once per cause and remedy, and a
    verdict (0 or 1) becomes NOT_SAVED. "Could not run" (2) and the interrupted statuses stay:
    they say more."""
    alike: dict[tuple[str, str], list[Problem]] = {}
    for problem in missed:
        alike.setdefault((problem.kind, problem.remedy), []).append(problem)
    for first, *more in alike.values():
        print_problem(first, prefix="not saved")
        if more:
            print(f"  and {len(more)} more write(s) alike", file=sys.stderr)
    return NOT_SAVED if missed and code in VERDICTS else code


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (`timeout`, a CI runner, `kill`) or SIGHUP (the terminal closed): stop the jobs,
    then exit as the signal would."""
    from workbench.run import jobs

    jobs.stop_all()
    _say_stopped(signal.Signals(signum).name, _RUNNING[0] if _RUNNING else None)
    raise SystemExit(128 + signum)


RESUMES = {"sweep": "--resume keeps the configs that finished", "bench": "--all takes --resume"}
_RUNNING: list[str] = []
"""The command this process runs, for the signal handler."""


def _say_stopped(how: str, command: str | None) -> None:
    """What an interrupted command says last, instead of a bare ^C: what became of its jobs and
    how to go on."""
    again = f"; {command}: {RESUMES[command]}" if command in RESUMES else ""
    print(
        f"\nstopped by {how}: the running job was cancelled and kept in the history as "
        f"cancelled; run the command again to redo it{again}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    sys.exit(main())
