"""A cache report: the scan, its findings and, for one kernel, its recomputed keys (parent side).

Scanning is pure file work here; recomputing a kernel's keys (and, on a GPU, re-timing its
tunings) runs in a child job, so this process never imports triton.
"""

from __future__ import annotations

import threading
from importlib import metadata

from workbench.cache import findings, scan, static
from workbench.cache.result import CacheReach
from workbench.catalog.discovery import KernelEntry
from workbench.diagnosis.finding import Finding
from workbench.run import jobs, machine
from workbench.run.params import CacheParams
from workbench.runtime.errors import Problem

CANCELLED = Problem("cancelled", "cancelled before the keys were recomputed", "run it again")


def installed_triton() -> str | None:
    """The installed Triton's version, read from its metadata (no import)."""
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def build_report(
    root: str | None,
    entry: KernelEntry | None,
    arch: int | None = None,
    verify: bool = False,
    cancel: threading.Event | None = None,
    on_event: jobs.OnEvent | None = None,
) -> dict:
    """The cache under root scanned, with its findings; with a kernel, the keys its inputs
    would be served (recomputed in a child job) and, with verify on a GPU, re-timed tunings.

    `cancel` kills the child job; what was done by then stays in the report, whose problem is
    then the cancel: the scan and its findings, and the keys and tunings the job had sent."""
    found = scan.scan(root or scan.default_root())
    version = installed_triton()
    report: dict = {
        "scan": found.to_dict(),
        "triton": version,
        "kernel": entry.name if entry else None,
        "problem": None,
        "findings": _json(findings.scan_findings(found, version)),
        "reach": None,
    }
    if entry is None:
        return report
    source = open(entry.file).read()
    report["findings"] += _json(static.findings(source, entry.file, version))
    if cancel is not None and cancel.is_set():
        report["problem"] = CANCELLED.to_dict()
        return report
    tuned = [
        {**t.__dict__, "path": findings.tuned_path(t.dir, t.kernel)} for t in found.tuned if t.key
    ]
    params = CacheParams(tuned, arch, verify)
    if verify and not machine.has_gpu():
        report["problem"] = {
            "cause": "verify re-times configs: it needs a GPU",
            "remedy": "run `cache verify` on the GPU host",
        }
    sent: dict = {}

    def keep(event: dict) -> None:
        if event.get("event") == "keys":
            sent.update(event["reach"])
        elif event.get("event") == "verified":
            sent["verify"].append(event["verify"])
        if on_event:
            on_event(event)

    job = jobs.Job("cache", entry, params, timeout=1800 if verify else 600)
    outcome = jobs.run_job(job, keep, cancel)
    if outcome.problem:
        report["problem"] = outcome.problem.to_dict()
    if not (outcome.result or sent):
        return report
    reach = CacheReach.from_dict(outcome.result or sent)
    report["reach"] = reach.to_dict()
    report["findings"] += _json(findings.reach_findings(found, reach))
    report["findings"] += _json(findings.measured_findings(reach.verify))
    return report


def _json(found: list[Finding]) -> list[dict]:
    return [f.to_dict() for f in found]


def owned_entries(report: dict) -> list[tuple[str, int]]:
    """Every entry of the report's kernel: its functions' compiled dirs and autotune files."""
    reach = CacheReach.from_dict(report["reach"]) if report.get("reach") else None
    names = {f["name"] for f in reach.functions} if reach else set()
    found = report["scan"]
    out = [(c["dir"], c["size"]) for c in found["compiled"] if c["name"] in names]
    out += [
        (findings.tuned_path(t["dir"], t["kernel"]), t["size"])
        for t in found["tuned"]
        if t["kernel"] in names
    ]
    return out
