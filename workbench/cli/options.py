"""Options that every command shares."""

from __future__ import annotations

import argparse


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
