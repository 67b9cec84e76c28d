"""The clocks a timing ran at, and when they were held back (pure: numbers in, words out).

A kernel that draws the board's power limit runs at a lower SM clock for as long as it runs: a
sustained timing (the bench's do_bench, about 100 ms of calls) runs at a lower clock than the
sweep's short batches, and the same kernel's times differ by as much. `bench.clocks` samples
NVML while a timing runs and gives back `Clocks`; this module says what they mean, for the
record, the views and the diagnosis.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.runtime.records import Record

REASONS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x20: "thermal",
    0x40: "hardware thermal slowdown",
    0x80: "power brake",
}
"""NVML's clock-event (throttle) reason bits that hold the SM clock back for power or heat.
The others say nothing about a kernel's own draw (idle, application clocks, sync boost, display
clock) and are left out."""
HELD_BACK = 0.9
"""Median SM clock over its maximum under which the clock was held back: a GPU at full boost
wanders a few percent with temperature; the power-capped attention kernel ran at 0.78."""


@dataclass
class Clocks(Record):
    """What NVML said while one timing ran, sampled every few milliseconds."""

    sm_mhz: float
    """Median SM clock."""
    sm_mhz_min: float
    max_mhz: float | None
    """The SM clock's maximum (boost) on this GPU."""
    power_w: float | None
    """Median board power draw (NVML's reading, on recent GPUs an average over its last
    second, so it lags a short timing)."""
    power_limit_w: float | None
    """The enforced power limit."""
    reasons: list[str] = field(default_factory=list)
    """REASONS seen in any sample, in the table's order."""
    samples: int = 0

    @property
    def ratio(self) -> float | None:
        """Median SM clock over its maximum."""
        return self.sm_mhz / self.max_mhz if self.max_mhz else None

    @property
    def text(self) -> str:
        """ "1545/1980 MHz, 652 W (power cap)"."""
        clock = f"{self.sm_mhz:.0f}/{self.max_mhz:.0f} MHz" if self.max_mhz else ""
        clock = clock or f"{self.sm_mhz:.0f} MHz"
        power = f", {self.power_w:.0f} W" if self.power_w is not None else ""
        why = f" ({', '.join(self.reasons)})" if self.reasons else ""
        return clock + power + why


def reason_words(mask: int) -> list[str]:
    """The REASONS set in an NVML clock-event bitmask, in the table's order."""
    return [words for bit, words in REASONS.items() if mask & bit]


def summary(
    sm_mhz: Sequence[float],
    power_mw: Sequence[float],
    masks: Sequence[int],
    max_mhz: float | None,
    power_limit_mw: float | None,
) -> Clocks | None:
    """The samples of one timing as `Clocks` (NVML gives power in milliwatts); None without a
    single clock sample."""
    if not sm_mhz:
        return None
    mask = 0
    for m in masks:
        mask |= m
    return Clocks(
        sm_mhz=float(statistics.median(sm_mhz)),
        sm_mhz_min=float(min(sm_mhz)),
        max_mhz=max_mhz,
        power_w=statistics.median(power_mw) / 1e3 if power_mw else None,
        power_limit_w=power_limit_mw / 1e3 if power_limit_mw else None,
        reasons=reason_words(mask),
        samples=len(sm_mhz),
    )


def held_back(clocks: Clocks | None, ratio: float = HELD_BACK) -> bool:
    """The median SM clock was under `ratio` of its maximum, for power or heat."""
    if clocks is None or clocks.ratio is None:
        return False
    return clocks.ratio < ratio and bool(clocks.reasons)


def case_note(clocks: Clocks | None, torch_clocks: Clocks | None) -> str | None:
    """ "clock held back while timed: kernel 1545/1980 MHz, 652 W (power cap); torch ...", or
    None when neither timing's clock was held back (a memory-bound kernel's, as a rule)."""
    if not (held_back(clocks) or held_back(torch_clocks)):
        return None
    sides = [f"{who} {c.text}" for who, c in (("kernel", clocks), ("torch", torch_clocks)) if c]
    return "clock held back while timed: " + "; ".join(sides)


def read(d: dict | None) -> Clocks | None:
    """A stored record's clocks (a plain dict in bench.json), or None where it has none."""
    return Clocks.from_dict(d) if d else None
