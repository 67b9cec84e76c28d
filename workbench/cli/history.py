"""`workbench history [NAME]`: past runs of every kind from the store, newest first, each with
its verdict; with NAME the bench times of each case across runs too, regressions flagged
(`bench.history`); `--trend` only those."""

from __future__ import annotations

import argparse
import sys

from workbench.bench import history
from workbench.cli.options import add_json_option
from workbench.run.kinds import COMMANDS
from workbench.run.store import Store
from workbench.views.history import (
    KERNEL_RUN_HEADERS,
    RUN_HEADERS,
    SHOWN,
    TREND_RUNS,
    kernel_history,
    run_row,
)
from workbench.views.text import print_json, table

KINDS = {c.name: c.runs for c in COMMANDS.values()}
"""What --kind accepts (the commands), and the kinds of run each leaves in the store."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="past runs, newest first")
    p.add_argument("name", nargs="?")
    p.add_argument(
        "--kind",
        choices=KINDS,
        help="only runs of this kind (resources and ir share one: both compile)",
    )
    p.add_argument("--limit", type=int, default=SHOWN)
    p.add_argument(
        "--trend",
        action="store_true",
        help="only the bench times per case across runs, regressions flagged (exit 1 on one)",
    )
    add_json_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    store = Store()
    if args.trend:
        return _trend_only(store, args)
    kinds = KINDS[args.kind] if args.kind else None
    found = kernel_history(store, args.name, kinds, args.limit) if args.name else None
    records = found.runs if found else store.history(None, kinds, args.limit)
    if not records:
        print(_nothing(store, args.name, args.kind), file=sys.stderr)
    if args.json:
        print_json([r.to_dict() for r in records])
        return 0
    if found and records:  # one kernel's runs: named once above them, not in a column
        print(found.summary() + "\n")
        print(table(KERNEL_RUN_HEADERS, [run_row(r, kernel=False) for r in records]))
    elif records:
        print(table(RUN_HEADERS, [run_row(r) for r in records]))
    trends = found.trends if found else []
    if trends:
        print("\nbench times per case, oldest to newest:\n" + trend_text(trends))
    return 0


def _trend_only(store: Store, args: argparse.Namespace) -> int:
    trends = history.trend(history.points(store.history(args.name, "bench", TREND_RUNS)))
    if args.json:
        found = [t.regression.to_dict() for t in trends if t.regression]
        print_json({"cases": [t.to_dict() for t in trends], "regressions": found})
    elif trends:
        print(trend_text(trends))
    else:
        print(_nothing(store, args.name, "bench"), file=sys.stderr)
    return 1 if any(t.regression for t in trends) else 0


def trend_text(trends: list[history.Trend]) -> str:
    """A table with one row per case, then one line per regression."""
    lines = [table(history.TREND_HEADERS, [history.trend_row(t) for t in trends])]
    lines += [f"regression: {t.regression.text}" for t in trends if t.regression]
    return "\n".join(lines)


def _nothing(store: Store, name: str | None, kind: str | None) -> str:
    """Why the table would be empty: no runs at all, none of that kernel, or none of that kind."""
    runs = f"{kind} runs" if kind else "runs"
    if not store.path.exists():
        return f"no runs recorded yet in {store.root} (set WORKBENCH_REPORTS to read another)"
    if name and name not in (kernels := store.kernels()):
        return f"no runs of {name!r} in {store.path}; kernels with runs: {', '.join(kernels)}"
    return f"no {runs}{f' of {name!r}' if name else ''} in {store.path}"
