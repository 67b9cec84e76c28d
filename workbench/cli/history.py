"""`workbench history [NAME]`: past runs from the store."""

from __future__ import annotations

import argparse
import time

from workbench.cli.options import add_json_option
from workbench.run.store import Store
from workbench.views.text import print_json, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="past runs, newest first")
    p.add_argument("name", nargs="?")
    p.add_argument("--kind", help="only runs of this kind (check, bench, profile, ...)")
    p.add_argument("--limit", type=int, default=30)
    add_json_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    records = Store().history(args.name, args.kind, args.limit)
    if args.json:
        print_json([r.to_dict() for r in records])
        return 0
    rows = [
        (
            r.id,
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)),
            r.kind,
            r.kernel,
            r.status,
            r.mode,
            _verdict(r),
            f"{r.seconds:.1f}s" if r.seconds is not None else "-",
        )
        for r in records
    ]
    print(table(("run", "started", "kind", "kernel", "status", "mode", "verdict", "time"), rows))
    return 0


def _verdict(r) -> str:  # type: ignore[no-untyped-def]
    if r.result and "correct" in r.result:
        return "correct" if r.result["correct"] else "NOT correct"
    if r.problem:
        return r.problem.get("kind", "")
    return ""
