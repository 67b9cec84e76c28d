"""Errors the check met, mapped to seed 002's error table: a case whose `problem` (kind, cause,
detail) matches a row's patterns is that row's finding, with its fix; one that matches none is
"check-error", with the check's own remedy. Patterns are Triton's real messages (3.4-3.9,
interpreter and compiler: tests/test_diagnosis_errors.py makes each error happen)."""

from __future__ import annotations

import re

from workbench.check.result import CaseResult
from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import PITFALLS, fix_text
from workbench.diagnosis.registry import detector

ERROR_ROWS = tuple(p for p in PITFALLS if p.patterns)
KIND_ROWS = {"out-of-resources": "out-of-resources"}
"""A Problem's kind that names a row by itself (the worker's own classification)."""


def classify(problem: dict) -> str:
    """The error row of a check Problem (as its dict): its cause first, then its detail."""
    cause, detail = str(problem.get("cause") or ""), str(problem.get("detail") or "")
    for text in (cause, detail):
        for row in ERROR_ROWS:
            if any(re.search(p, text) for p in row.patterns):
                return row.id
    return KIND_ROWS.get(str(problem.get("kind")), "check-error")


@detector(*(p.id for p in ERROR_ROWS), "check-error")
def check_errors(facts: Facts) -> list[Finding]:
    errored = [c for c in facts.check.cases if c.status == "error"] if facts.check else []
    by_row: dict[str, list[CaseResult]] = {}
    for c in errored:
        by_row.setdefault(classify(c.problem or {"cause": c.reason}), []).append(c)
    return [_finding(row, cases) for row, cases in by_row.items()]


def _finding(row: str, cases: list[CaseResult]) -> Finding:
    problem = cases[0].problem or {"cause": cases[0].reason}
    cause = str(problem.get("cause") or cases[0].reason)
    evidence = {
        "source": "check",
        "cases": len(cases),
        "kind": problem.get("kind"),
        "cause": cause,
        "remedy": problem.get("remedy") or "",
    }
    return Finding(
        id=row,
        title=f"{len(cases)} case(s) fail with: {cause}",
        severity="high",
        evidence=evidence,
        fix=fix_text(row, evidence),
        file=problem.get("file"),
        line=problem.get("line"),
    )
