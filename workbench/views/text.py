"""Plain-text rendering for the CLI: tables and problems (no rich import: `list` must be quick)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.runtime.errors import Problem

if TYPE_CHECKING:
    from workbench.run.jobs import Outcome


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def shared_values(configs: Sequence[dict | None]) -> dict:
    """The K=V values every config has alike (of two or more): said once, so that each config
    is named by what differs (full labels grew too wide to tell configs apart)."""
    values = [c or {} for c in configs]
    if len(values) < 2:
        return {}
    return {k: v for k, v in values[0].items() if all(k in o and o[k] == v for o in values)}


def short_label(values: dict | None, label: str, shared: dict) -> str:
    """`label` without the `shared` values."""
    if not shared or not values:
        return label
    return kv({k: v for k, v in values.items() if k not in shared}) or label


def kv(values: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in values.items())


def fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_problem(problem: Problem, prefix: str = "error") -> None:
    label = f"{prefix} ({problem.source})" if problem.source else prefix
    print(f"{label}: {problem}", file=sys.stderr)


def run_footer(run_id: str, seconds: float, where: str, extra: str = "") -> str:
    """The closing line of a command that ran a job: its run id, time and artifacts."""
    return f"run {run_id} ({seconds:.1f} s{extra}); artifacts in {where}"


def print_run_end(outcome: Outcome, where: str | None = None) -> None:
    """What every command that ran a job ends with, on stderr: the run's id, time and artifacts
    (a result the store could not keep is said by `cli.main`, for every command alike)."""
    print(run_footer(outcome.run_id, outcome.seconds, where or outcome.run_dir), file=sys.stderr)
