"""Each command started with its typed parameters, the same from the CLI and from the app: the
job (or the jobs: a sweep's workers, a diagnosis's steps) runs and its outcome comes back for
the caller to print or show. No printing here."""

from __future__ import annotations

import threading

from workbench.cache.report import build_report
from workbench.catalog.discovery import KernelEntry
from workbench.diagnosis import diagnose_profile
from workbench.loop.diagnose import DiagnoseRun
from workbench.loop.diagnose import run as run_diagnose
from workbench.loop.gather import OnStep, Options
from workbench.profilers import sanitizer, session
from workbench.run import jobs, machine
from workbench.run.params import CheckParams, Params, SweepParams
from workbench.runtime.errors import fail
from workbench.sweep import cluster, spread
from workbench.sweep.result import SweepResult

Cancel = threading.Event | None


def check(
    entry: KernelEntry,
    params: CheckParams,
    timeout: float,
    on_event: jobs.OnEvent | None = None,
    cancel: Cancel = None,
    sanitize: str | None = None,
) -> jobs.Outcome:
    """The check job; with `sanitize`, under that compute-sanitizer tool (GPU)."""
    if sanitize:
        return sanitizer.sanitized_check(entry, sanitize, params, timeout, on_event, cancel)
    return job("check", entry, params, timeout, on_event, cancel)


def job(
    kind: str,
    entry: KernelEntry,
    params: Params,
    timeout: float,
    on_event: jobs.OnEvent | None = None,
    cancel: Cancel = None,
) -> jobs.Outcome:
    """A job of one child process: `ir` (for `ir` and `resources` alike) or `bench`."""
    return jobs.run_job(jobs.Job(kind, entry, params, timeout), on_event, cancel)


def sweep(
    entry: KernelEntry,
    params: SweepParams,
    on_event: jobs.OnEvent | None = None,
    cancel: Cancel = None,
    timeout: float = 3600.0,
    gpus: str | None = None,
    on_cluster: str | None = None,
) -> tuple[SweepResult | None, list[jobs.Outcome]]:
    """(the sweep's result or None, its workers' outcomes and, last, its own): on this host's
    GPUs (`gpus`: all, or indices such as 0,1, one worker each; none: one worker) or on the Ray
    cluster `on_cluster` names."""
    if on_cluster and gpus:
        raise fail(
            "bad-arguments",
            "--cluster and --gpus both name where the workers run",
            "drop --gpus: on a cluster every GPU gets a worker",
            source="usage",
        )
    gpu_list = _gpus(gpus)
    if (len(gpu_list) > 1 or on_cluster) and params.strategy != "exhaustive":
        raise fail(
            "bad-arguments",
            f"--strategy {params.strategy} searches on one GPU: each timing decides the next",
            "drop --gpus or --cluster (or name one GPU), or time every config over them (no "
            "--strategy)",
            source="usage",
        )
    if on_cluster:
        return cluster.run_sweep(entry, params, on_cluster, on_event, cancel, timeout)
    return spread.run_sweep(entry, params, gpu_list, on_event, cancel, timeout)


def _gpus(text: str | None) -> list[str]:
    if not text:
        return []
    if not machine.has_gpu():
        raise fail(
            "needs-gpu", machine.needs_gpu_message("sweep --gpus"), "drop --gpus", source="usage"
        )
    return spread.all_gpus() if text == "all" else [g.strip() for g in text.split(",") if g]


def profile(
    entry: KernelEntry,
    request: session.Request,
    on_event: jobs.OnEvent | None = None,
    cancel: Cancel = None,
) -> session.ProfileRun:
    """The profile run, its summary read against the pitfall table (ncu measures; the findings
    are made here, above the profilers)."""
    run = session.profile(entry, request, on_event, cancel)
    if run.summary is not None:
        run.summary = diagnose_profile(run.summary)
    return run


def diagnose(
    entry: KernelEntry,
    opts: Options,
    try_fix: str | None = None,
    on_step: OnStep | None = None,
    cancel: Cancel = None,
) -> DiagnoseRun:
    return run_diagnose(entry, opts, try_fix, on_step, cancel)


def cache(
    folder: str | None,
    entry: KernelEntry | None,
    arch: int | None,
    verify: bool = False,
    on_event: jobs.OnEvent | None = None,
    cancel: Cancel = None,
) -> dict:
    """The cache report: Triton's caches read, with the keys `entry`'s inputs get (a child job)."""
    return build_report(folder, entry, arch, verify=verify, cancel=cancel, on_event=on_event)
