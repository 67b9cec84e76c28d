"""Detectors by pitfall id: small pure functions `(facts) -> list[Finding]`, each registered
under the table rows it finds (`@detector("row-id", ...)`); `diagnose` runs every one. A row
seen in several kinds of facts (a spill in the cubin, in ncu, among the configs) has one
detector per kind; `rank.join` makes their findings one."""

from __future__ import annotations

from collections.abc import Callable

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import BY_ID

Detector = Callable[[Facts], list[Finding]]

DETECTORS: dict[str, list[Detector]] = {}
"""Pitfall id -> the detectors that find it."""


def detector(*ids: str) -> Callable[[Detector], Detector]:
    def register(fn: Detector) -> Detector:
        for id in ids:
            if id not in BY_ID:
                raise KeyError(f"{fn.__name__}: {id!r} is not a row of diagnosis.pitfalls")
            DETECTORS.setdefault(id, []).append(fn)
        return fn

    return register


def detectors() -> list[Detector]:
    """Every registered detector once, in the table's order."""
    return list(dict.fromkeys(fn for p in BY_ID for fn in DETECTORS.get(p, [])))
