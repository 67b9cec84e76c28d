"""One `diagnose` run: gather the facts, diagnose them, optionally try one fix, and record it all
(kind "diagnose", its result the `Diagnosis`; a trial is its own run, kind "diagnose-try")."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench.catalog.discovery import KernelEntry
from workbench.diagnosis import diagnose, roofline, routing
from workbench.diagnosis.facts import Diagnosis, Facts
from workbench.loop.gather import Gathered, OnStep, Options, gather
from workbench.loop.trial import Trial, pick, try_fix
from workbench.run import jobs, machine, store
from workbench.runtime.errors import Problem, WorkbenchError, fail

RESULT_FILE = "diagnosis.json"


@dataclass
class DiagnoseRun:
    run_id: str
    run_dir: str
    diagnosis: Diagnosis
    gathered: Gathered
    trial: Trial | None = None
    problems: list[Problem] = field(default_factory=list)
    """What stopped the trial, or kept the store from recording; the diagnosis stands."""
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "artifacts": self.run_dir,
            "seconds": round(self.seconds, 2),
            "diagnosis": self.diagnosis.to_dict(),
            "facts": self.gathered.facts.to_dict(),
            "steps": self.gathered.steps,
            "runs": [o.to_dict() for o in self.gathered.runs],
            "trial": self.trial.to_dict() if self.trial else None,
            "problems": [p.to_dict() for p in self.problems],
        }


def run(
    entry: KernelEntry,
    opts: Options,
    wanted_try: str | None = None,
    on_step: OnStep | None = None,
    cancel: threading.Event | None = None,
) -> DiagnoseRun:
    if wanted_try and (opts.gpu_facts == "none" or not machine.has_gpu()):
        raise fail(  # before minutes of gathering: a trial times both sides on a GPU
            "needs-gpu",
            machine.needs_gpu_message(f"diagnose --try {wanted_try}"),
            "run it on the GPU host (without --gpu-facts none); here, `diagnose` gives the "
            "findings and the alternatives a trial would time",
            source="usage",
        )
    start = time.monotonic()
    run_id = store.new_run_id()
    run_dir, store_problem = jobs.prepare_run_dir(run_id)
    gathered = gather(entry, opts, on_step, cancel, profile=wanted_try is None)
    out = DiagnoseRun(run_id, run_dir, diagnose(gathered.facts), gathered)
    out.problems += [store_problem] if store_problem else []
    if wanted_try:
        _try(entry, opts, wanted_try, out, on_step, cancel)
    out.seconds = time.monotonic() - start
    text = json.dumps(out.to_dict(), indent=1, default=str)
    try:
        store.write_text(Path(run_dir, RESULT_FILE), text)
    except store.NotSaved as exc:  # the disk filled while gathering: the diagnosis is still shown
        out.problems.append(exc.problem)
    summary = {
        "findings": len(out.diagnosis.findings),
        "top": out.diagnosis.findings[0].id if out.diagnosis.findings else None,
        "above_info": sum(f.severity != "info" for f in out.diagnosis.findings),
        "steps": {s["step"]: s["seconds"] for s in gathered.steps},
    }
    problem = store.record_run(
        run_id,
        "diagnose",
        entry.name,
        file=entry.file,
        params={"dtype": opts.dtype, "shape": opts.shape, "gpu_facts": opts.gpu_facts},
        status="ok",
        seconds=out.seconds,
        mode=machine.mode() if opts.gpu_facts == "auto" else "interpreter",
        summary=summary,
        artifacts=run_dir,
        result=out.diagnosis.to_dict(),
    )
    out.problems += [problem] if problem else []
    return out


def _try(
    entry: KernelEntry,
    opts: Options,
    wanted: str,
    out: DiagnoseRun,
    on_step: OnStep | None,
    cancel: threading.Event | None,
) -> None:
    started = time.monotonic()
    facts = out.gathered.facts
    try:
        finding = pick(out.diagnosis.findings, wanted)
        out.trial, runs = try_fix(
            entry,
            finding,
            facts.configs,
            out.gathered.shape,
            out.gathered.dtype,
            Path(out.run_dir),
            cancel,
        )
        out.gathered.runs += runs
    except WorkbenchError as exc:
        out.problems.append(exc.problem)
        return
    seconds = time.monotonic() - started
    reroute(out.diagnosis, facts, out.trial)
    if on_step:
        on_step("try", _said(out.trial), seconds)
    problem = store.record_run(
        store.new_run_id(),
        "diagnose-try",
        entry.name,
        file=entry.file,
        params={"try": wanted, "diagnose_run": out.run_id},
        status="ok",
        seconds=seconds,
        mode="gpu",
        summary={"speedup": out.trial.speedup, "kept": (out.trial.kept or out.trial.before).label},
        artifacts=out.run_dir,
        result=out.trial.to_dict(),
    )
    out.problems += [problem] if problem else []


def reroute(diagnosis: Diagnosis, facts: Facts, trial: Trial) -> None:
    """The diagnosis's routing read again after `trial`: from the timing with its fix when the
    fix was kept, else from the timing before it, labelled so (it was read before the trial)."""
    diagnosis.routing = routing.advice(facts, roofline.place(facts), trial.tried())


def _said(trial: Trial) -> str:
    if trial.after is None:
        return f"no candidate was correct; {trial.before.label} stays"
    return f"{trial.before.label} -> {trial.after.label}: {trial.speedup or 0:.2f}x"
