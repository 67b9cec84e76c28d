"""One row of a sweep, typed (pure): a config at a shape, as the job builds it up, sends it as an
event and sweep.json keeps it. A TypedDict, not a dataclass: a row grows as its config compiles,
is checked and timed, crosses processes as JSON and is explained on reading, and its stored
shape is the JSON's. The type checker holds every producer and reader to these keys; a key the
job starts writing is declared here (tests/test_sweep_row.py reads the recorded sweeps)."""

from __future__ import annotations

import math
from typing import Any, TypedDict


class Check(TypedDict):
    """The config's output against the reference (`check.result.CaseResult`'s figures)."""

    max_abs_diff: float | None
    rel_l2: float | None
    bad: int


class Round(TypedDict):
    """One of successive halving's timings of the row (the last is the row's own figures)."""

    samples: int
    ms: float | None
    p20: float | None
    p80: float | None
    timing_s: float | None


class ConfigAt(TypedDict):
    """A config at a shape: what a row is of, and what sweep.json's `running` names."""

    shape: list[int]
    label: str
    values: dict[str, Any]


class _Planned(ConfigAt):
    """The keys every row has from its plan on (`job._row`), whatever became of its config."""

    status: str
    """One of `analysis.STATUSES`."""
    reason: str
    """Why it was pruned, skipped or wrong ("" otherwise)."""
    compile_s: float | None
    resources: dict[str, Any] | None
    """Its compile's static facts (regs, spill_bytes, shared_bytes, occupancy...)."""
    ms: float | None
    p20: float | None
    p80: float | None
    samples: int
    problem: dict[str, Any] | None
    """What failed (`runtime.errors.Problem.to_dict`)."""


class SweepRow(_Planned, total=False):
    """A sweep's row: the planned keys, and those its compile, check, timing and reading add."""

    # compiled
    hash: str
    programs: int | None
    """Programs its launch starts (the grid's size; None where the grid is unknown)."""
    launched: bool
    """The config the kernel runs as written (an untuned kernel's; False elsewhere)."""
    # checked and timed (`bench.timing.adaptive_ms`); planned as None, but the big spaces
    # recorded without it (benchmarks/record_spaces.py) are read as they are
    check: Check | None
    check_s: float | None
    timing_s: float | None
    calls: int | None
    stop: str | None
    """Why the timing stopped ("light": a few samples only, successive halving's)."""
    # a search strategy's (`sweep.strategy`)
    chosen_by: str
    order: int
    rounds: list[Round]
    # the worker that sent it, in a sweep by several (`sweep.queue`)
    worker: str
    # explained on reading (`analysis.summarize`)
    why: str
    brief: str
    model: float | None
    """The static model's time for it over the best's."""


def timed_ms(row: SweepRow) -> float:
    """The row's median time; inf where it has none (not timed, or not yet): slower than all."""
    ms = row["ms"]
    return math.inf if ms is None else ms
