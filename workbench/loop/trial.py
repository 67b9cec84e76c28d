"""Try a fix the workbench can apply by itself, check it and measure it against the kernel as it
runs now, on a GPU: another config (a finding's cross-compiled alternatives, timed beside the
launched config by the sweep job, each checked against the reference first), or the workload
replayed from one CUDA graph (the bench job's launch facts). Both sides come from one run.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.catalog.discovery import KernelEntry
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.routing import Tried
from workbench.loop.gather import result_of
from workbench.run import jobs
from workbench.run.params import BenchParams, SweepParams
from workbench.runtime.errors import fail
from workbench.sweep.result import SweepResult

FIX_KINDS = ("config", "cuda-graph")


@dataclass
class Side:
    label: str
    ms: float | None
    correct: bool | None
    values: dict | None = None
    """The config's values (None for the graph replay)."""


@dataclass
class Trial:
    kernel: str
    finding: str
    fix_id: str
    shape: list[int] | None
    dtype: str | None
    before: Side
    after: Side | None
    """The best correct candidate; None when none was correct."""
    candidates: list[dict] = field(default_factory=list)
    """Every candidate as measured: label, status, ms, why."""
    gpu: str | None = None
    peers: list[Side] = field(default_factory=list)
    """What a user would run instead, timed in the same run (eager PyTorch, torch.compile)."""

    @property
    def speedup(self) -> float | None:
        if self.after is None or not self.before.ms or not self.after.ms:
            return None
        return self.before.ms / self.after.ms

    @property
    def kept(self) -> Side | None:
        """The suggested way to run: the candidate when it is correct and faster, else as is."""
        faster = self.speedup is not None and self.speedup > 1.0
        return self.after if faster and self.after and self.after.correct else self.before

    def to_dict(self) -> dict:
        return {**asdict(self), "speedup": self.speedup, "kept": asdict(self.kept or self.before)}

    def tried(self) -> Tried:
        """The trial as the routing reads it: what the fix changes (a config's changed values,
        else its label), how much faster it ran, whether it was kept."""
        fix = self.after or self.before
        changed = {
            k: v for k, v in (fix.values or {}).items() if (self.before.values or {}).get(k) != v
        }
        label = ",".join(f"{k}={v}" for k, v in changed.items()) or fix.label
        return Tried(label, self.speedup, self.after is not None and self.kept is self.after)

    @classmethod
    def from_dict(cls, d: dict) -> Trial:
        after = Side(**d["after"]) if d.get("after") else None
        trial = cls(d["kernel"], d["finding"], d["fix_id"], d.get("shape"), d.get("dtype"),
                    Side(**d["before"]), after)  # fmt: skip
        trial.candidates, trial.gpu = d.get("candidates") or [], d.get("gpu")
        trial.peers = [Side(**p) for p in d.get("peers") or []]
        return trial


def alternatives(f: Finding) -> list[dict]:
    """The configs a config fix times: the finding's own, or those of a finding joined into it
    (a measured spill leads, the static one with its neighbours is joined)."""
    joined = [j.get("alternatives") for j in f.evidence.get("joined") or []]
    return f.evidence.get("alternatives") or next((a for a in joined if a), [])


def pick(findings: list[Finding], wanted: str) -> Finding:
    """The finding `--try` names, by its id or by its fix kind; the first that can be tried."""
    triable = [f for f in findings if f.fix_id in FIX_KINDS]
    for f in triable:
        if wanted in (f.id, f.fix_id):
            return f
    offered = ", ".join(sorted({f.id for f in triable})) or "none in this diagnosis"
    raise fail(
        "nothing-to-try",
        f"--try {wanted}: no finding of this kernel offers that fix",
        f"use one the diagnosis offers ({offered})",
        source="usage",
    )


def try_fix(
    entry: KernelEntry,
    finding: Finding,
    configs: list[dict],
    shape: list[int] | None,
    dtype: str | None,
    folder: Path,
    cancel: threading.Event | None = None,
) -> tuple[Trial, list[jobs.Outcome]]:
    """Apply the finding's fix and measure both sides; `configs` are the facts' config rows
    (the launched one is the "before" of a config fix); `folder` keeps the space tried."""
    if finding.fix_id == "cuda-graph":
        return _graph(entry, finding, shape, dtype, cancel)
    # A config fix: the launched config and the finding's alternatives, timed by one sweep job.
    launched = next((r for r in configs if r.get("launched")), None)
    alts = alternatives(finding)
    if launched is None or not alts:
        raise fail(
            "nothing-to-try",
            f"{finding.id}: no launched config or no alternative to time",
            "run `diagnose` first so the neighbours are compiled; a kernel launched through "
            "@triton.autotune is tuned with `sweep` instead",
        )
    space = [launched["values"]] + [a["values"] for a in alts]
    space_file = folder / "space.json"
    space_file.write_text(json.dumps(space))
    params = SweepParams(shapes=[shape] if shape else None, dtype=dtype, space=str(space_file))
    outcome = _run(jobs.Job("sweep", entry, params), cancel)
    result = SweepResult.from_dict(result_of(outcome))
    rows = result.rows
    by_label = {r["label"]: r for r in rows}
    first = by_label.get(launched["label"]) or {}
    before = Side(
        launched["label"], first.get("ms"), first.get("status") == "ok", launched["values"]
    )
    timed = [r for r in rows if r["label"] != launched["label"] and r.get("ms") is not None]
    timed = [r for r in timed if r.get("status") == "ok"]
    best = min(timed, key=lambda r: r["ms"], default=None)
    after = Side(best["label"], best["ms"], True, best["values"]) if best else None
    candidates = [
        {"label": r["label"], "status": r["status"], "ms": r.get("ms"), "why": r.get("reason", "")}
        for r in rows
    ]
    trial = Trial(entry.name, finding.id, "config", shape, result.dtype, before, after)
    trial.candidates, trial.gpu = candidates, result.gpu
    return trial, [outcome]


def _graph(
    entry: KernelEntry,
    finding: Finding,
    shape: list[int] | None,
    dtype: str | None,
    cancel: threading.Event | None,
) -> tuple[Trial, list[jobs.Outcome]]:
    # torch.compile of the reference too: for a launch-bound workload, the peer a user would pick
    shapes, dtypes = [shape] if shape else None, [dtype] if dtype else None
    params = BenchParams(shapes, dtypes, compile=True, launches=True)
    outcome = _run(jobs.Job("bench", entry, params), cancel)
    rec = result_of(outcome)["records"][0]
    launch = rec.get("launch") or {}
    before = Side("launched eagerly", launch.get("eager_ms"), rec["status"] == "ok")
    after = None
    if launch.get("graph_ms") is not None:
        after = Side(
            "replayed from one CUDA graph", launch["graph_ms"], launch.get("graph_correct")
        )
    candidate = {
        "label": "cuda-graph",
        "status": "ok" if after and after.correct else "failed",
        "ms": launch.get("graph_ms"),
        "why": launch.get("graph_problem", ""),
    }
    trial = Trial(entry.name, finding.id, "cuda-graph", rec["shape"], rec["dtype"], before, after)
    trial.candidates, trial.gpu = [candidate], rec.get("device")
    trial.peers = trial_peers(rec)
    return trial, [outcome]


def trial_peers(rec: dict) -> list[Side]:
    """The reference eagerly and through torch.compile, from the bench record (outputs of the
    reference are the check's truth, so both count as correct)."""
    peers = [Side("eager PyTorch (the reference)", rec.get("torch_ms"), True)]
    mode = rec.get("compile_mode") or "default"
    compiled = rec.get("compile_ms")
    why = rec.get("speedup_vs_compile")
    label = f'torch.compile(mode="{mode}")'
    if compiled is None and isinstance(why, str):
        label += f" {why}"
    return peers + [Side(label, compiled, True if compiled is not None else None)]


def _run(job: jobs.Job, cancel: threading.Event | None) -> jobs.Outcome:
    outcome = jobs.run_job(job, None, cancel)
    result_of(outcome)  # raises when the job gave no result
    return outcome
