"""GPU goal: the sweep's work queue over 1, 2, 4... GPUs of this host, natively and on a local
Ray cluster, on a space whose one-GPU timing phase lasts a minute or more. Two workloads:
  matmul  (default) the grouped bf16 matmul of sweep_matmul16.py over record_spaces.py's 360
          configs at ten shapes (its three, 4096^3, 8192x8192x512, 256x4096x4096, and seven
          more of 2^35 to 2^37 FLOP): 3,600 checks and timings of 0.1 to 10 ms kernels, the
          GPU's work dominating (eight shapes gave a one-GPU timing phase of 55 s on an H100
          once the check was prepared per shape: ten keep it past a minute);
  moe     the MoE grouped GEMM of sweep_moe.py over its auto space (162 configs) at 21 token
          counts from 1 to 4096: 3,402 rows of 10-100 us kernels, each worker's per-shape set-up
          (capture, inputs, references) and per-row overheads dominating.
Triton's own pick is skipped.

A first run on every GPU compiles the space into the kernel's Triton cache (its numbers are kept as
"first": cold on a fresh host); then each run is warm: 1 GPU, 2, 4, ... (every power of two up to
the GPUs present, and all of them), then over `--cluster local` on two of them (the native pair's
comparison, run again after it: run-to-run spread; the one GPU of a one-GPU host), and once more on
all GPUs with the last GPU's worker killed (SIGKILL) once a quarter of the rows are in, to show its
configs re-run elsewhere. Every run must give the one-GPU run's rows (the same configs, each with
the same status) and its winners (each shape's best, or one within noise of it). sweep_s is the
timing phase: the queue's wall time from the first item handed out to the last row in. Each run's
JSON and log, and the report (ratios to one GPU), are packed into DIR/sweep_gpus.tgz; a step that
would overrun --budget-s (the device tool's 10 minutes less a margin) is skipped and said so.

    python benchmarks/sweep_gpus.py --out DIR [--workload matmul3|moe] [--strategy] [--budget-s 520]

matmul3 is the matmul at record_spaces.py's three shapes alone (a one-GPU host's comparison of
the native path with Ray, and with --strategy a live check of coordinate descent).
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

from _common import MATMUL16, ROOT, publish
from record_spaces import SWEEPS, matmul_space

sys.path.insert(0, str(ROOT))
from workbench.runtime.grammar import shape_text  # noqa: E402
from workbench.sweep import analysis  # noqa: E402

MOE = ROOT / "benchmarks" / "sweep_moe.py"
MOE_TOKENS = 21
"""Token counts sweep_moe.py sweeps by default."""
MOE_SPACE = 162
"""Configs of the moe auto space per shape (before pruning)."""
KILL_AT = 0.25
MORE_SHAPES = ("8192x4096x4096", "4096x8192x2048", "2048x4096x8192", "8192x8192x1024",
               "1024x8192x8192", "8192x2048x8192", "4096x4096x8192")  # fmt: skip
"""Matmul shapes past record_spaces.py's three: a timing phase long enough to share out."""


def workload(name: str, tmp: Path) -> tuple[list[str], int]:
    """The sweep's arguments past `sweep`, and the rows a finished run holds."""
    if name == "moe":
        return ["moe_gemm", "--path", str(MOE), "--space", "auto"], MOE_SPACE * MOE_TOKENS
    space = matmul_space()
    (tmp / "space.json").write_text(json.dumps(space))
    [shapes] = [extra for n, *_, extra, _share in SWEEPS if n == "matmul"]
    if name == "matmul":
        shapes = shapes + [a for shape in MORE_SHAPES for a in ("--shape", shape)]
    args = ["matmul16", "--path", str(MATMUL16), "--space", str(tmp / "space.json"), *shapes]
    return args, len(space) * shapes.count("--shape")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--workload", choices=("matmul", "matmul3", "moe"), default="matmul")
    ap.add_argument("--strategy", action="store_true",
                    help="also sweep on one GPU with --strategy coordinate (its default budget) "
                    "and compare each shape's best with the exhaustive one-GPU run's")  # fmt: skip
    ap.add_argument("--budget-s", type=float, default=520.0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bench = Bench(out, args.workload, args.budget_s)
    gpus = bench.gpus()
    counts = sorted({c for c in (1, 2, 4, 8, 16) if c <= len(gpus)} | {len(gpus)})
    every = ",".join(gpus)
    bench.run("first", ["--gpus", every], estimate=0)
    for c in counts:
        bench.run(f"gpus_{c}", ["--gpus", ",".join(gpus[:c])], estimate=bench.guess(c))
    # Ray's local cluster sees the GPUs CUDA_VISIBLE_DEVICES shows it: two (the native path's
    # pair to compare with), or the one a single-GPU host has
    pair = gpus[:2]
    if importlib.util.find_spec("ray") is None:
        bench.report["runs"]["ray_local"] = {"skipped": "ray is not installed: pip install ray"}
    else:
        bench.run(f"ray_local_{len(pair)}", ["--cluster", "local"],
                  estimate=bench.guess(len(pair)) + 30, visible=",".join(pair))  # fmt: skip
        if len(pair) > 1:  # the native pair again: Ray's run between two of them
            bench.run(f"gpus_{len(pair)}_after", ["--gpus", ",".join(pair)],
                      estimate=bench.guess(len(pair)))  # fmt: skip
    if args.strategy:
        bench.run("coordinate", ["--gpus", gpus[0], "--strategy", "coordinate"],
                  estimate=bench.guess(1) / 2)  # fmt: skip
    if len(gpus) > 1:
        bench.run("killed", ["--gpus", every], estimate=bench.guess(len(gpus)) + 20, kill=gpus[-1])
    bench.finish()


class Bench:
    def __init__(self, out: Path, name: str, budget: float):
        self.out, self.budget, self.start = out, budget, time.monotonic()
        self.tmp = Path(tempfile.mkdtemp(prefix="sweep-gpus-"))
        self.sweep, self.rows = workload(name, self.tmp)
        self.report: dict = {"workload": name, "runs": {}}

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

    def run(
        self,
        name: str,
        args: list[str],
        estimate: float,
        kill: str | None = None,
        visible: str | None = None,
    ) -> None:
        spent = time.monotonic() - self.start
        if spent + estimate > self.budget:
            why = f"would end past the {self.budget:g} s budget ({spent:.0f} s + ~{estimate:.0f} s)"
            self.report["runs"][name] = {"skipped": why}
            return
        reports = self.tmp / name  # the run folders hold every cubin: they stay out of the tar
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "WORKBENCH_REPORTS": str(reports), "PYTHONPATH": path}
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        cmd = [sys.executable, "-m", "workbench", "sweep", *self.sweep, "--no-triton-pick",
               "--json", *args]  # fmt: skip
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
                    {
                        k: s.get(k)
                        for k in (
                            "worker",
                            "gpu_index",
                            "host",
                            "rows",
                            "status",
                            "ready_s",
                            "timings",
                        )
                    }
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
        coordinate = results.pop("coordinate", None)
        if one and coordinate:
            self.report["runs"]["coordinate"]["against_exhaustive"] = searched(one, coordinate)
        if one:
            t1 = one["timings"]
            for name, result in results.items():
                entry = self.report["runs"][name]
                t = result["timings"]
                for key in ("sweep_s", "timing_s", "total_s"):
                    if t.get(key) and t1.get(key):
                        entry[key.replace("_s", "_ratio")] = round(t[key] / t1[key], 3)
                entry["same_as_one_gpu"] = same_rows(one, result)
        for name, result in results.items():  # Ray against the native path on as many GPUs
            if not name.startswith("ray_local"):
                continue
            native = name.replace("ray_local", "gpus")
            for key, run in (
                ("sweep_vs_native", native),
                ("sweep_vs_native_after", f"{native}_after"),
            ):
                ours = result["timings"].get("sweep_s")
                theirs = results.get(run, {}).get("timings", {}).get("sweep_s")
                if ours and theirs:
                    self.report["runs"][name][key] = round(ours / theirs, 3)
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


def searched(one: dict, other: dict) -> dict:
    """Per shape: the configs a strategy timed, out of those the exhaustive run timed, and its
    best's time over the exhaustive best's (each as timed in its own run)."""
    out = {}
    for shape, info in one["shapes"].items():
        ms = {r["label"]: r["ms"] for r in one["rows"] if shape_text(r["shape"]) == shape}
        timed = [r for r in other["rows"] if shape_text(r["shape"]) == shape and r.get("ms")]
        best = min(timed, key=lambda r: r["ms"], default=None)
        out[shape] = {
            "timed": len(timed),
            "of": sum(1 for v in ms.values() if v),
            "best": best and best["label"],
            "best_vs_exhaustive": best and round(best["ms"] / ms[info["best"]], 4),
            "exhaustive_ms_of_its_best": best and ms.get(best["label"]),
        }
    return out


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
