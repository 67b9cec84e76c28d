"""Autotune-cache findings (the cache doctor's, `cache.findings`) as rows of the pitfall table:
they come as Findings already; here their severities and evidence take the diagnosis's form."""

from __future__ import annotations

from dataclasses import replace

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import SEVERITIES, Finding
from workbench.diagnosis.registry import detector

SEVERITY = {"error": "high", "warning": "medium"}
"""The cache doctor's words for severity, in the diagnosis's."""


@detector("autotune-stale")
def cache_findings(facts: Facts) -> list[Finding]:
    return [_normal(f) for f in facts.cache]


def _normal(f: Finding) -> Finding:
    severity = SEVERITY.get(f.severity, f.severity)
    evidence = f.evidence if isinstance(f.evidence, dict) else {"detail": f.evidence}
    return replace(
        f,
        severity=severity if severity in SEVERITIES else "info",
        evidence={**evidence, "source": "cache"},
    )
