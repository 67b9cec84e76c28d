"""`workbench report NAME|--all`: a kernel's stored results (check, bench with its roofline,
sweep, resources, profile, diagnosis, history) as Markdown or HTML pages with PNG plots, and with
--all an index page linking every kernel that has runs. Reads the store only: no job runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.catalog.discovery import discover
from workbench.cli.options import add_command_options, writable_folder
from workbench.report.write import FORMATS, write
from workbench.run.store import Store, reports_dir
from workbench.runtime.errors import fail
from workbench.views.text import print_json, print_problem


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="stored results as Markdown or HTML pages with plots")
    p.add_argument("name", nargs="?", help="the kernel; or --all")
    p.add_argument("--all", action="store_true", help="every kernel with runs, and an index")
    p.add_argument("--format", choices=FORMATS, default="md", help="md (default) or html")
    p.add_argument("--out", metavar="DIR", help="where the pages go (default: reports/report)")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    if args.all == bool(args.name):
        raise fail(
            "bad-arguments",
            "report takes one kernel name or --all" + (", not both" if args.all else ""),
            "run `workbench report NAME` or `workbench report --all`",
            source="usage",
        )
    store = Store()
    with_runs = [k for k in store.kernels() if k != "-"]  # "-": jobs of no kernel
    files = {}
    if args.name and args.name not in with_runs:  # a name known nowhere is refused, near ones named
        files[args.name] = discover(args.path).find(args.name).file
    out = Path(writable_folder(args.out or str(reports_dir() / "report"), "--out"))
    names = with_runs if args.all else [args.name]
    report = write(names, out, args.format, store, args.all, files)
    if args.json:
        print_json(report.to_dict())
        return 0
    for k in report.kernels:
        print(k.page)
        for problem in k.problems:
            print_problem(problem, prefix=f"unreadable ({k.kernel})")
    if report.index:
        print(report.index)
    if not report.kernels:
        print(f"no kernel has runs in {store.path}: the index says so", file=sys.stderr)
    return 0
