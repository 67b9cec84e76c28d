"""Options that every command shares."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable

from workbench.ir.occupancy import DEFAULT_ARCH, parse_arch
from workbench.runtime.errors import fail


def add_path_option(parser: argparse.ArgumentParser, dest: str = "path") -> None:
    parser.add_argument(
        "--path",
        dest=dest,
        action="append",
        default=[],
        metavar="FILE_OR_DIR",
        help="kernel module or folder to use instead of ./kernels (repeatable)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def add_arch_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--arch as every command takes it: sm_XX (sm_90, sm_90a, 90, sm_100, sm_120...)."""
    parser.add_argument(
        "--arch",
        type=arch_number,
        metavar="sm_XX",
        help=f"{what} for this arch (default: the GPU, else sm_{DEFAULT_ARCH})",
    )


def arch_number(text: str) -> int:
    try:
        return parse_arch(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_command_options(
    parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int]
) -> None:
    """What a command's parser ends with: --path, --json, and the function that runs it."""
    add_path_option(parser)
    add_json_option(parser)
    parser.set_defaults(run=run)


def writable_folder(path: str, flag: str) -> str:
    """The folder an option names, made now: a path that can't be written is refused before a
    job starts, naming the option, instead of failing in the child."""
    folder = os.path.abspath(path)
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # a new file, no name a link could stand at
            pass
    except OSError as exc:
        raise fail(
            "unwritable-folder",
            f"{flag} {path}: cannot write there ({exc.strerror or exc})",
            f"give {flag} a folder you can write (it is created if missing)",
            file=folder,
            source="usage",
        ) from exc
    return folder
