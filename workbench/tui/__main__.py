"""`python -m workbench.tui [--path FILE_OR_DIR]`: the terminal UI without the CLI's parser and
commands in front of it, so nothing but the UI is imported before the kernel list paints."""

import argparse
import sys

from workbench.tui.app import run_app

parser = argparse.ArgumentParser(prog="python -m workbench.tui", description="the terminal UI")
parser.add_argument(
    "--path",
    action="append",
    default=[],
    metavar="FILE_OR_DIR",
    help="kernel module or folder to use instead of ./kernels (repeatable)",
)
sys.exit(run_app(parser.parse_args().path))
