"""`workbench history [NAME]`: past runs from the store; with NAME (or `--trend`) the bench
times of each case across runs, regressions flagged (`bench.history`)."""

from __future__ import annotations

import argparse
import sys
import time

from workbench.bench import history
from workbench.cli.options import add_json_option
from workbench.profilers.saved import PROFILE_KINDS
from workbench.run.store import RESULT_ERRORS, UNREADABLE, RunRecord, Store
from workbench.views.actions import typed
from workbench.views.stored import STORE_KINDS
from workbench.views.text import print_json, table

KINDS: dict[str, tuple[str, ...]] = {
    "check": ("check",),
    "bench": ("bench",),
    "ir": ("ir",),
    "resources": ("ir",),  # `resources` runs the ir job: one kind in the store
    "profile": PROFILE_KINDS,  # the profiled child, and reports read with --import
}
"""What --kind accepts, and the kinds stored for each."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="past runs, newest first")
    p.add_argument("name", nargs="?")
    p.add_argument(
        "--kind",
        choices=KINDS,
        help="only runs of this kind (resources and ir share one: both compile)",
    )
    p.add_argument("--limit", type=int, default=30)
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
    records = store.history(args.name, KINDS[args.kind] if args.kind else None, args.limit)
    if not records:
        print(_nothing(store, args.name, args.kind), file=sys.stderr)
    if args.json:
        print_json([r.to_dict() for r in records])
        return 0
    if not records:
        return 0
    rows = [
        (
            r.id,
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "-",
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
    if args.name and args.kind in (None, "bench"):
        trends = history.trend(history.points(store.history(args.name, "bench", TREND_RUNS)))
        if trends:
            print("\nbench times per case, oldest to newest:\n" + trend_text(trends))
    return 0


TREND_RUNS = 10_000
"""Bench runs read for a trend: all of them, in practice."""
TYPED = set(STORE_KINDS.values())
"""Stored kinds whose result reads back typed (the others keep a dict)."""


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


def _verdict(r: RunRecord) -> str:
    """correct / NOT correct for a check or bench, else the kind of its problem; "unreadable"
    for a record that does not read back as its kind's result."""
    if r.status == UNREADABLE:
        return UNREADABLE
    if r.kind in TYPED:
        try:
            typed(r.kind, r.result)
        except RESULT_ERRORS:
            return UNREADABLE
    if r.result and "correct" in r.result:
        return "correct" if r.result["correct"] else "NOT correct"
    if r.problem:
        return str(r.problem.get("kind", ""))
    return ""
