"""Profiles kept in the store: an imported report recorded like a run, the newest for a kernel.

A profile run's child (kind "profile-target") and an imported report ("profile-import") each
leave the parsed ncu summary as profile.json in their run folder.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.run import store
from workbench.run.kinds import PROFILE_KINDS


@dataclass(frozen=True)
class StoredProfile:
    run_id: str
    kind: str
    started: float
    summary: dict

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started))
        how = "imported from" if self.kind == "profile-import" else "ncu run, report"
        return f"profile {self.run_id} ({when}), {how} {self.summary.get('file')}"


def latest(kernel: str) -> StoredProfile | None:
    """The newest ncu summary the store holds for `kernel` (its run folder's profile.json), as
    stored: the reader has the diagnosis find what it shows (`diagnosis.diagnose_profile`)."""
    db = store.Store()
    records = [r for kind in PROFILE_KINDS for r in db.history(kernel, kind, limit=20)]
    for rec in sorted(records, key=lambda r: r.started, reverse=True):
        try:
            summary = json.loads((Path(rec.artifacts or "") / "profile.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(summary, dict) and summary.get("tool") == "ncu":
            return StoredProfile(rec.id, rec.kind, rec.started, summary)
    return None


def record_import(result: dict, path: str, name: str | None) -> None:
    """Keep an imported ncu summary, with its findings, in the store, one run per kernel, as a
    profile run keeps its own: the TUI's Profile tab shows the newest. The summary stays whole
    if that fails."""
    by_name: dict[str, list[dict]] = {}
    for k in result["kernels"]:
        owner = name or (k["range"].split(":", 1)[0] if k.get("range") else None)
        if owner:
            by_name.setdefault(owner, []).append(k)
    notes = result.setdefault("notes", [])
    if not by_name:
        notes.append(
            "not recorded: no workbench NVTX range names the kernel; give its name: "
            "`profile NAME --import FILE`"
        )
    recorded = result.setdefault("recorded", [])
    for owner, kernels in by_name.items():
        launches = {k["launch"] for k in kernels}
        part = {
            **{k: v for k, v in result.items() if k not in ("notes", "recorded")},
            "kernels": kernels,
            "launches": len(kernels),
            "findings": [f for f in result["findings"] if f["evidence"]["launch"] in launches],
        }
        run_id = store.new_run_id()
        try:
            folder = store.run_folder(run_id)
            store.write_text(folder / "profile.json", json.dumps(part, indent=1, default=str))
        except store.NotSaved as exc:
            notes.append(f"not recorded for {owner}: {exc.problem.cause} ({exc.problem.file})")
            continue
        problem = store.record_run(
            run_id,
            "profile-import",
            owner,
            file=None,
            params={"report": os.path.abspath(path)},
            status="ok",
            seconds=0.0,
            mode="import",
            summary={"launches": len(kernels), "findings": len(part["findings"])},
            artifacts=str(folder),
        )
        if problem:
            notes.append(f"not recorded for {owner}: {problem.cause} ({problem.file})")
            continue
        recorded.append({"kernel": owner, "run_id": run_id, "artifacts": str(folder)})
