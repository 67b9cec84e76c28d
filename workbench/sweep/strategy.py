"""Search strategies for spaces too big to time whole (pure): which configs to time next, given
the space and what was timed so far. Where timings come from is not their business: a live
sweep times on the GPU, a replay answers from a recorded sweep (`sweep.replay`).

A strategy is a generator: it yields an `Ask` (configs, by their index in the space, and how many
samples to time them with: None for the full adaptive timing) and is sent back one row per config,
in order. `search`
drives it: it calls `evaluate(values, samples) -> row` for each config not timed yet at that
fidelity (a repeated ask is answered from memory, free), stops at the budget, and keeps the trace.
A row is the sweep's (`sweep.row.SweepRow`): `status` ("ok" when checked and timed), `ms`, and
the seconds its check and timing took (`check_s`, `timing_s`), which a time budget counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from random import Random
from typing import Any

from workbench.runtime.errors import fail
from workbench.sweep.row import SweepRow, timed_ms
from workbench.sweep.space import Values, key

STRATEGIES = ("exhaustive", "random", "coordinate", "halving")
DEFAULT_SHARE = 0.25
"""Without --budget, a strategy other than exhaustive times at most this share of the space."""
MOVE = 0.001
"""Coordinate descent moves only to a neighbour faster by more than this (Inductor's margin)."""
ETA = 3
"""Successive halving keeps the fastest third of each round."""
LIGHT_SAMPLES = (3, 9)
"""Samples of halving's light rounds; the round after them is the full adaptive timing."""


@dataclass(frozen=True)
class Budget:
    """At most `evaluations` timings, or timings started within `seconds` (the last may run
    past it); neither: no limit."""

    evaluations: int | None = None
    seconds: float | None = None

    def text(self) -> str:
        if self.evaluations is not None:
            return f"{self.evaluations} timings"
        return f"{self.seconds:g} s" if self.seconds is not None else "the whole space"

    def to_dict(self) -> dict:
        return {"evaluations": self.evaluations, "seconds": self.seconds}


def parse_budget(text: str, flag: str = "--budget") -> Budget:
    """ "40" -> 40 evaluations; "30s", "2.5m" -> seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m)?\s*", text.lower())
    remedy = f"give a count of timings ({flag} 40) or a time ({flag} 30s, {flag} 2m)"
    if not found:
        raise fail(
            "bad-budget", f"{flag} {text!r} is neither a count nor a time", remedy, source="usage"
        )
    number, unit = float(found[1]), found[2]
    if unit:
        seconds = number * (60.0 if unit == "m" else 1.0)
        if seconds <= 0:
            raise fail("bad-budget", f"{flag} {text!r} is no time at all", remedy, source="usage")
        return Budget(seconds=seconds)
    if not number.is_integer() or number < 1:
        raise fail(
            "bad-budget",
            f"{flag} {text!r} is not a whole number of timings >= 1",
            remedy,
            source="usage",
        )
    return Budget(evaluations=int(number))


def default_budget(strategy: str, size: int) -> Budget:
    """The budget when none is given: the whole space for exhaustive, else a quarter of it."""
    if strategy == "exhaustive":
        return Budget()
    return Budget(evaluations=max(1, math.ceil(DEFAULT_SHARE * size)))


@dataclass(frozen=True)
class Ask:
    configs: list[int]
    """Indices into the space."""
    samples: int | None = None
    """None: the full adaptive timing; else a light timing of that many samples."""


Search = Generator[Ask, list[SweepRow], None]


class Space:
    """A space's configs in their order, with the axes coordinate descent moves along: every
    key whose value differs between configs, its values ordered (numbers by size)."""

    def __init__(self, configs: list[Values]):
        self.configs = configs
        self.labels = [key(c) for c in configs]
        names = list(dict.fromkeys(k for c in configs for k in c))
        values = {n: {_order(c.get(n)): c.get(n) for c in configs} for n in names}
        self.axes = [n for n in names if len(values[n]) > 1]
        rank = {n: {o: i for i, o in enumerate(sorted(values[n]))} for n in self.axes}
        self.ranks = [tuple(rank[a][_order(c.get(a))] for a in self.axes) for c in configs]
        """Each config's position on every axis."""
        self._at = {r: i for i, r in reversed(list(enumerate(self.ranks)))}
        self._near: dict[tuple[int, str], list[int]] = {}

    def __len__(self) -> int:
        return len(self.configs)

    def index(self, label: str) -> int | None:
        return self.labels.index(label) if label in self.labels else None

    def neighbours(self, i: int, axis: str) -> list[int]:
        """The nearest config below and above config `i` along `axis`: the next value on that
        axis with the other axes kept; where the space has no such config (it is not a full
        product), the one changing the fewest other axes, then the least."""
        if (i, axis) not in self._near:
            a = self.axes.index(axis)
            here = self.ranks[i]
            out = []
            for side in (-1, 1):
                beside = here[:a] + (here[a] + side,) + here[a + 1 :]
                if beside in self._at:  # the next value, the others kept: no search needed
                    out.append(self._at[beside])
                    continue
                best = None
                for j, there in enumerate(self.ranks):
                    step = side * (there[a] - here[a])
                    if step <= 0:
                        continue
                    others = [abs(x - y) for k, (x, y) in enumerate(zip(here, there)) if k != a]
                    score = (sum(o > 0 for o in others), step, sum(others), j)
                    best = score if best is None or score < best else best
                if best is not None:
                    out.append(best[-1])
            self._near[(i, axis)] = out
        return self._near[(i, axis)]


def _order(value: Any) -> tuple:
    """Numbers by size, anything else by its text after them; a missing value first."""
    if value is None:
        return (0, 0, "")
    if isinstance(value, (int, float)):
        return (1, value, "")
    return (2, 0, str(value))


def starts_from_triton(space: str | None) -> bool:
    """Whether coordinate descent starts from Triton's pick in a sweep of `space`: not in the
    kernel's own configs, which Triton's autotuner times every one of to pick."""
    return space not in (None, "own")


def static_start(rows: list[SweepRow], triton: str | None) -> tuple[str, str]:
    """(label, why) where coordinate descent starts: Triton's pick when it is in the space, else
    the config the static facts rank best (no spills, then the highest occupancy, then the
    space's order)."""
    labels = [r["label"] for r in rows]
    if triton is not None and triton in labels:
        return triton, "Triton's pick"

    def rank(i: int) -> tuple:
        res = rows[i].get("resources") or {}
        occ = (res.get("occupancy") or {}).get("percent", 0.0)
        return (res.get("spill_bytes", 0) > 0, -occ, i)

    best = min(range(len(rows)), key=rank)
    return labels[best], "the static facts' best (no spills, highest occupancy)"


def _ms(row: SweepRow) -> float:
    return timed_ms(row) if row["status"] == "ok" else math.inf


def exhaustive(space: Space, rng: Random, budget: Budget, start: int | None) -> Search:
    """Every config, in the space's order."""
    for i in range(len(space)):
        yield Ask([i])


def random_sample(space: Space, rng: Random, budget: Budget, start: int | None) -> Search:
    """A uniform sample without replacement, one config at a time."""
    for i in rng.sample(range(len(space)), len(space)):
        yield Ask([i])


def coordinate(space: Space, rng: Random, budget: Budget, start: int | None) -> Search:
    """Coordinate descent, as PyTorch Inductor's tuner does it: from the start, time both
    neighbours along one axis, move to the faster if it beats the current config by more than
    MOVE, go on to the next axis; stop after a pass over every axis that moved nowhere. Budget
    left then, it descends again from a random config not timed yet."""
    asked: set[int] = set()
    current = start if start is not None else 0
    while True:
        asked.add(current)
        (row,) = yield Ask([current])
        best = _ms(row)
        moved = True
        while moved:
            moved = False
            for axis in space.axes:
                near = space.neighbours(current, axis)
                asked.update(near)
                rows = yield Ask(near)
                times = [_ms(r) for r in rows]
                j = min(range(len(near)), key=times.__getitem__, default=None)
                if j is not None and times[j] < best * (1.0 - MOVE):
                    current, best, moved = near[j], times[j], True
        fresh = [i for i in range(len(space)) if i not in asked]
        if not fresh:
            return
        current = rng.choice(fresh)


def halving(space: Space, rng: Random, budget: Budget, start: int | None) -> Search:
    """Successive halving: time a uniform sample (the whole space if the budget allows) with a
    light timing, keep the fastest 1/ETA, time those with more samples, and the survivors of the
    light rounds with the full timing. An evaluation budget sizes the first round so that every
    round fits; under a time budget the first round is the whole space in random order, so
    wherever the time ends it, what it timed is a uniform sample."""
    size = len(space)
    first = size if budget.evaluations is None else _fit(size, budget.evaluations)
    alive = rng.sample(range(size), first)
    for samples in (*LIGHT_SAMPLES, None):
        if len(alive) <= 1:
            samples = None
        rows = yield Ask(alive, samples)
        if samples is None:
            return
        times = dict(zip(alive, (_ms(r) for r in rows)))
        kept = sorted((i for i in alive if times[i] < math.inf), key=times.__getitem__)
        alive = kept[: math.ceil(len(kept) / ETA)]


def _rounds(first: int) -> int:
    """Timings successive halving makes from a first round of `first` configs."""
    total, alive = 0, first
    for _ in LIGHT_SAMPLES:
        if alive <= 1:
            break
        total += alive
        alive = math.ceil(alive / ETA)
    return total + alive


def _fit(size: int, evaluations: int) -> int:
    """The largest first round whose rounds fit `evaluations` timings."""
    return max((n for n in range(1, size + 1) if _rounds(n) <= evaluations), default=1)


MAKERS: dict[str, Callable[[Space, Random, Budget, int | None], Search]] = {
    "exhaustive": exhaustive,
    "random": random_sample,
    "coordinate": coordinate,
    "halving": halving,
}


@dataclass
class Trace:
    """What one search did: each timing in order (label, samples, ms or None, seconds), the
    strategy's pick after each (the fastest by its latest timing), and why it stopped."""

    strategy: str
    budget: Budget
    evaluations: list[dict] = field(default_factory=list)
    picks: list[str | None] = field(default_factory=list)
    stopped: str = ""
    """"searched" (the strategy ended) or "budget"."""
    _latest: dict[str, float] = field(default_factory=dict, repr=False)

    @property
    def pick(self) -> str | None:
        return self.picks[-1] if self.picks else None

    @property
    def seconds(self) -> float | None:
        """Seconds the timings took, None when some row did not say."""
        spent = [e["seconds"] for e in self.evaluations]
        return None if None in spent else sum(spent)

    def summary(self) -> dict:
        return {
            "evaluations": len(self.evaluations),
            "seconds": self.seconds,
            "pick": self.pick,
            "stopped": self.stopped,
        }

    def spent(self) -> bool:
        b = self.budget
        if b.evaluations is not None and len(self.evaluations) >= b.evaluations:
            return True
        return b.seconds is not None and sum(e["seconds"] or 0.0 for e in self.evaluations) >= (
            b.seconds
        )

    def add(self, label: str, samples: int | None, row: SweepRow) -> None:
        ms = _ms(row)
        check, timing = row.get("check_s"), row.get("timing_s")
        seconds = None if timing is None else (check or 0.0) + timing
        timed = None if ms == math.inf else ms
        self.evaluations.append(
            {"label": label, "samples": samples, "ms": timed, "seconds": seconds}
        )
        self._latest[label] = ms
        best = min(self._latest, key=self._latest.__getitem__)
        self.picks.append(best if self._latest[best] < math.inf else None)


Evaluate = Callable[[Values, int | None], SweepRow]


def search(
    strategy: str,
    space: Space,
    evaluate: Evaluate,
    budget: Budget,
    seed: int = 0,
    start: str | None = None,
) -> Trace:
    """Run `strategy` over `space`, timing through `evaluate`, within `budget`."""
    trace = Trace(strategy, budget)
    steps = MAKERS[strategy](space, Random(seed), budget, space.index(start) if start else None)
    memo: dict[tuple[int, int | None], SweepRow] = {}
    try:
        ask = next(steps)
        while True:
            rows = []
            for i in ask.configs:
                done = (i, ask.samples)
                if done not in memo:
                    if trace.spent():
                        steps.close()
                        trace.stopped = "budget"
                        return trace
                    memo[done] = evaluate(space.configs[i], ask.samples)
                    trace.add(space.labels[i], ask.samples, memo[done])
                rows.append(memo[done])
            ask = steps.send(rows)
    except StopIteration:
        trace.stopped = "searched"
    return trace
