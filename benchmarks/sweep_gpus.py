"""GPU goal: the sweep's work queue over 1, 2, 4... GPUs of this host, natively and on a local
Ray cluster, on a space whose one-GPU timing phase lasts a minute or more: the MoE grouped GEMM of
benchmarks/sweep_moe.py over its auto space (162 configs, about 140 left after pruning) at 21
token counts from 1 to 4096, about 2,900 (shape, config) pairs, Triton's own pick skipped.

A first run on every GPU compiles the space into the kernel's Triton cache (its numbers are kept
as "first": cold on a fresh host); then each run is warm: 1 GPU, 2, 4, ... (every power of two up
to the GPUs present, and all of them), the same over `--cluster local`, and once more on all GPUs
with the last GPU's worker killed (SIGKILL) once a quarter of the rows are in, to show its configs
re-run elsewhere. Every run must give the one-GPU run's rows (the same configs, each with the same
status) and its winners (each shape's best, or one within noise of it). sweep_s is the timing
phase: the queue's wall time from the first item handed out to the last row in. Each run's JSON
and log, and the report (ratios to one GPU), are packed into DIR/sweep_gpus.tgz; a step that would
overrun --budget-s (the device tool's 10 minutes less a margin) is skipped and said so.

    python benchmarks/sweep_gpus.py --out DIR [--tokens 1,16,256,4096] [--budget-s 520]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from _common import ROOT, publish

sys.path.insert(0, str(ROOT))
from workbench.runtime.grammar import shape_text  # noqa: E402
from workbench.sweep import analysis  # noqa: E402

MOE = ROOT / "benchmarks" / "sweep_moe.py"
SPACE = 162
"""Configs of the auto space per shape (before pruning): the rows a finished run holds."""
KILL_AT = 0.25


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", help="token counts to sweep (default: sweep_moe.TOKENS)")
    ap.add_argument("--budget-s", type=float, default=520.0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokens = args.tokens.split(",") if args.tokens else None
    bench = Bench(out, tokens, args.budget_s)
    gpus = bench.gpus()
    counts = sorted({c for c in (1, 2, 4, 8, 16) if c <= len(gpus)} | {len(gpus)})
    every = ",".join(gpus)
    bench.run("first", ["--gpus", every], estimate=0)
    for c in counts:
        bench.run(f"gpus_{c}", ["--gpus", ",".join(gpus[:c])], estimate=bench.guess(c))
    if importlib.util.find_spec("ray") is None:
        bench.report["ray_local"] = {"skipped": "ray is not installed: pip install -e '.[ray]'"}
    else:
        bench.run("ray_local", ["--cluster", "local"], estimate=bench.guess(len(gpus)) + 30)
    if len(gpus) > 1:
        bench.run("killed", ["--gpus", every], estimate=bench.guess(len(gpus)) + 20, kill=gpus[-1])
    bench.finish()


class Bench:
    def __init__(self, out: Path, tokens: list[str] | None, budget: float):
        self.out, self.budget, self.start = out, budget, time.monotonic()
        self.shapes = [a for t in tokens for a in ("--shape", t)] if tokens else []
        self.rows = SPACE * (len(tokens) if tokens else 21)
        self.tmp = Path(tempfile.mkdtemp(prefix="sweep-gpus-"))
        self.report: dict = {"runs": {}}

    def gpus(self) -> list[str]:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True)  # fmt: skip
        found = [line.split(",", 1) for line in smi.stdout.splitlines() if line.strip()]
        self.report["gpus"] = [name.strip() for _, name in found]
        return [index.strip() for index, _ in found]

    def guess(self, gpus: int) -> float:
        """Seconds a warm run on `gpus` GPUs should take, from the one-GPU run (or the first)."""
        runs = self.report["runs"]
        if "gpus_1" in runs:
            return runs["gpus_1"]["wall_s"] / gpus + 20
        first = runs.get("first", {})
        return first.get("wall_s", 0.0) * len(self.report["gpus"]) / gpus

    def run(self, name: str, args: list[str], estimate: float, kill: str | None = None) -> None:
        spent = time.monotonic() - self.start
        if spent + estimate > self.budget:
            why = f"would end past the {self.budget:g} s budget ({spent:.0f} s + ~{estimate:.0f} s)"
            self.report["runs"][name] = {"skipped": why}
            return
        reports = self.tmp / name  # the run folders hold every cubin: they stay out of the tar
        env = {**os.environ, "WORKBENCH_REPORTS": str(reports), "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "workbench", "sweep", "moe_gemm", "--path", str(MOE),
               "--space", "auto", *self.shapes, "--no-triton-pick", "--json", *args]  # fmt: skip
        started = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        killed = self._kill_midway(proc, reports, kill) if kill else None
        stdout, stderr = proc.communicate()
        wall = round(time.monotonic() - started, 1)
        (self.out / f"{name}.json").write_text(stdout)
        (self.out / f"{name}.log").write_text(stderr)
        try:
            result = json.loads(stdout)["result"]
        except (ValueError, KeyError, TypeError):
            result = None
        entry: dict = {"cmd": " ".join(cmd[1:]), "rc": proc.returncode, "wall_s": wall}
        if result:
            entry |= {
                "timings": result["timings"],
                "complete": result["complete"],
                "summary": {k: result["summary"][k] for k in ("configs", "rows", "ok", "pruned")},
                "workers": [
                    {k: s.get(k) for k in ("worker", "gpu_index", "host", "rows", "status")}
                    | {"lost": len(s.get("lost") or [])}
                    for s in result.get("shards") or []
                ],
            }
            self.report.setdefault("results", {})[name] = result
        if killed:
            entry["killed"] = killed
        self.report["runs"][name] = entry

    def _kill_midway(self, proc: subprocess.Popen, reports: Path, gpu: str) -> dict | None:
        """SIGKILL the worker on `gpu` once KILL_AT of the rows are in: a worker of this run
        (a session leader whose command is the sweep worker, CUDA_VISIBLE_DEVICES=gpu)."""
        while proc.poll() is None:
            time.sleep(0.5)
            done = 0
            for path in reports.glob("runs/*/sweep.json"):
                try:
                    done = max(done, len(json.loads(path.read_text())["rows"]))
                except (OSError, ValueError, KeyError):
                    continue
            if done < KILL_AT * self.rows:
                continue
            for pid in _descendants(proc.pid):
                if _is_worker(pid, gpu):
                    os.kill(pid, signal.SIGKILL)
                    return {"pid": pid, "gpu": gpu, "rows_in": done}
        return None

    def finish(self) -> None:
        results = self.report.pop("results", {})
        one = results.get("gpus_1")
        if one:
            t1 = one["timings"]
            for name, result in results.items():
                entry = self.report["runs"][name]
                t = result["timings"]
                for key in ("sweep_s", "timing_s", "total_s"):
                    if t.get(key) and t1.get(key):
                        entry[key.replace("_s", "_ratio")] = round(t[key] / t1[key], 3)
                entry["same_as_one_gpu"] = same_rows(one, result)
        if "killed" in results:
            lost = [s for s in results["killed"].get("shards") or [] if s["status"] == "crash"]
            self.report["runs"]["killed"]["lost_configs_rerun"] = bool(lost) and all(
                s["lost"] for s in lost
            )
        self.report["budget_s"] = self.budget
        self.report["seconds"] = round(time.monotonic() - self.start, 1)
        publish(self.report, self.out, "sweep_gpus")
        with tarfile.open(self.out / "sweep_gpus.tgz", "w:gz") as tar:
            for path in sorted(self.out.glob("*.json")) + sorted(self.out.glob("*.log")):
                tar.add(path, arcname=path.name)


def same_rows(one: dict, other: dict) -> dict:
    """Whether `other` has one's configs with the same statuses, and each shape's winner is
    one's best or within noise of it (timed on one GPU)."""
    a = {(shape_text(r["shape"]), r["label"]): r for r in one["rows"]}
    b = {(shape_text(r["shape"]), r["label"]): r for r in other["rows"]}
    status = [f"{k[0]} {k[1]}: {a[k]['status']} -> {b[k]['status']}" for k in a if k in b and
              a[k]["status"] != b[k]["status"]]  # fmt: skip
    winners, differ = 0, []
    for shape, info in other["shapes"].items():
        mine, best = info.get("best"), one["shapes"].get(shape, {}).get("best")
        row, top = a.get((shape, mine)), a.get((shape, best))
        if mine == best or (row and top and row["status"] == "ok" and
                            analysis.within_noise(row, top)):  # fmt: skip
            winners += 1
        else:
            differ.append(f"{shape}: {mine} (one GPU: {best})")
    return {
        "same_configs": a.keys() == b.keys(),
        "status_differs": status[:10],
        "winners_agree": f"{winners}/{len(other['shapes'])}",
        "winners_differ": differ[:10],
    }


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _is_worker(pid: int, gpu: str) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        return (
            b"sweep-worker" in cmd
            and os.getpgid(pid) == pid
            and (f"CUDA_VISIBLE_DEVICES={gpu}".encode() in env)
        )
    except OSError:
        return False


if __name__ == "__main__":
    main()
