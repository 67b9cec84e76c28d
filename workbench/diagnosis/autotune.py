"""Autotune-cache findings (the cache doctor's, `cache.findings`) as rows of the pitfall table:
Findings as the doctor makes them, marked as the cache's."""

from __future__ import annotations

from dataclasses import replace

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.registry import detector


@detector("autotune-stale")
def cache_findings(facts: Facts) -> list[Finding]:
    return [replace(f, evidence={**f.evidence, "source": "cache"}) for f in facts.cache]
