"""Run a sweep from the parent (no torch here): one job, or one per GPU with its own
CUDA_VISIBLE_DEVICES and a share of the configs, merged; a job that ended on a hung or crashing
config is resumed past it; the merged result is saved beside the runs, plotted and recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from workbench.catalog.discovery import KernelEntry
from workbench.run import jobs, store
from workbench.runtime.errors import fail
from workbench.sweep import analysis, plot
from workbench.sweep.analysis import RESULT_FILE
from workbench.sweep.result import SweepResult

RETRIES = 5
"""Resumes after a config hung or crashed its process, per GPU."""


def all_gpus() -> list[str]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise fail("no-gpus", "nvidia-smi is not on PATH", "name the GPUs: --gpus 0,1")
    out = subprocess.run(
        [smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True
    )
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def resume_file(kernel: str) -> str:
    """The newest sweep.json of `kernel` under reports/runs: what --resume continues. A file
    that does not read as a sweep (damaged, edited) is passed over, and named when no sweep of
    the kernel is left to resume."""
    found, unread = [], []
    for path in (store.reports_dir() / "runs").glob(f"*/{RESULT_FILE}"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            unread.append(path)
        elif data.get("kernel") == kernel:
            found.append(path)
    if found:
        return str(max(found, key=lambda p: p.stat().st_mtime))
    passed = f"; {len(unread)} sweep file(s) do not read as one, e.g. {unread[0]}" if unread else ""
    raise fail(
        "bad-resume",
        f"no earlier sweep of {kernel} to resume{passed}",
        "run it without --resume: a fresh sweep",
        source="usage",
    )


def run_sweep(
    entry: KernelEntry,
    params: dict,
    gpus: list[str],
    on_event: Callable[[dict], None] | None = None,
    cancel: threading.Event | None = None,
    timeout: float = 3600.0,
) -> tuple[SweepResult | None, list[jobs.Outcome]]:
    """(merged result or None, the outcomes of every job run)."""
    shards = [None] if len(gpus) <= 1 else list(range(len(gpus)))
    cores = os.cpu_count() or 1
    outcomes: list[list[jobs.Outcome]] = [[] for _ in shards]

    def shard_run(i: int) -> None:
        p = dict(params)
        wrap = []
        if shards[i] is not None:
            p["shard"] = [i, len(shards)]
            p["jobs"] = p.get("jobs") or max(1, cores // len(shards))
            wrap = ["env", f"CUDA_VISIBLE_DEVICES={gpus[i]}"]
        elif gpus:
            wrap = ["env", f"CUDA_VISIBLE_DEVICES={gpus[0]}"]
        for _ in range(RETRIES + 1):
            outcome = jobs.run_job(jobs.Job("sweep", entry, p, timeout), on_event, cancel, wrap)
            outcomes[i].append(outcome)
            partial = _read(outcome)
            if outcome.status not in ("crash", "timeout", "error") or not partial:
                return
            if not partial.running or (cancel and cancel.is_set()):
                return
            p["resume"] = str(Path(outcome.run_dir) / RESULT_FILE)  # go on past the hung config

    threads = [threading.Thread(target=shard_run, args=(i,)) for i in range(len(shards))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lasts = [runs[-1] for runs in outcomes if runs]
    parts = [r for r in (_read(o) for o in lasts) if r]
    flat = [o for runs in outcomes for o in runs]
    if not parts:
        return None, flat
    result = analysis.merge(parts) if len(parts) > 1 else parts[0]
    folder = Path(lasts[0].run_dir)
    try:
        if len(parts) > 1:
            (folder / "sweep_merged.json").write_text(json.dumps(result.to_dict(), default=str))
        result.plot = plot.png(result, folder / "sweep.png")
    except OSError as exc:  # the disk filled during the sweep: the result is still printed
        result.store_problem = store.write_fault(folder, exc).problem.to_dict()
    if len(parts) > 1:
        _record(entry, params, result, folder)
    return result, flat


def _read(outcome: jobs.Outcome) -> SweepResult | None:
    """The job's result, or what its sweep.json kept when it was cancelled or died."""
    if outcome.result:
        return SweepResult.from_dict(outcome.result)
    path = Path(outcome.run_dir) / RESULT_FILE
    try:
        return SweepResult.from_dict(json.loads(path.read_text())) if path.exists() else None
    except (OSError, *store.RESULT_ERRORS):
        return None


def _record(entry: KernelEntry, params: dict, result: SweepResult, folder: Path) -> None:
    problem = store.record_run(
        store.new_run_id(),
        "sweep",
        entry.name,
        file=entry.file,
        params={**params, "merged_from": [s["gpu_index"] for s in result.shards or []]},
        status="ok" if result.complete else "partial",
        seconds=result.timings.get("total_s", 0.0),
        mode=result.mode,
        summary=result.summary,
        artifacts=str(folder),
        result=result.to_dict(),
    )
    if problem:  # the merged file is in the run folder either way
        result.store_problem = problem.to_dict()
