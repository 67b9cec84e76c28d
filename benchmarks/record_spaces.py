"""Record big config spaces on a GPU host, every config timed, for `sweep replay` and its tests.

Three exhaustive sweeps, one after another, each within its share of a deadline:
  matmul  the grouped bf16 matmul of sweep_matmul16.py, 360 configs (BLOCK_M, BLOCK_N 32..256,
          BLOCK_K 32..128, 4 or 8 warps, 2..5 stages) at 4096^3, 8192x8192x512, 256x4096x4096;
  moe     moe_gemm of spaces_kernels.py (tokens routed to 2 of 8 experts, bf16), 128 configs at
          13 batch sizes, 1..4096 tokens;
  softmax softmax_rows of spaces_kernels.py (fp16), ROWS x BLOCK_N x warps x stages kept to at
          most 64 elements a thread, at 16384x1024, 4096x4096, 512x32768.
Each sweep's `--json` output is kept whole (raw/), and as a compact fixture (spaces/NAME.json:
the rows' timings, seconds and static facts, what replay and analysis read; copy these to
tests/fixtures/spaces/), then replayed with every strategy (replay/NAME.json and .txt). A sweep
cut by its deadline keeps the configs it finished (the run folder's sweep.json; complete: false).
All of it goes into OUT/spaces.tgz, beside OUT/record_spaces.json (the steps and their times);
the run folders (cubins and all) stay in a temporary folder.

    python benchmarks/record_spaces.py --out "$OUT"            # about 5 minutes on an H100
    python benchmarks/record_spaces.py --out "$OUT" --deadline 400

The deadline (default 500 s) bounds the three sweeps together: each gets its share (0.42, 0.40,
0.18) of the time left when it starts; the replays and the tar take seconds more.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "benchmarks" / "spaces_kernels.py"
MATMUL = ROOT / "benchmarks" / "sweep_matmul16.py"
ROW_KEYS = ("shape", "label", "values", "status", "reason", "ms", "p20", "p80", "samples",
            "calls", "stop", "check_s", "timing_s", "compile_s", "problem")  # fmt: skip
RESOURCE_KEYS = ("regs", "spill_bytes", "shared_bytes", "occupancy")
HEAD_KEYS = ("kernel", "mode", "arch", "gpu", "gpu_index", "triton_version", "dtype", "space",
             "jobs", "shard", "timings", "complete", "notes")  # fmt: skip


def matmul_space() -> list[dict]:
    tiles = (32, 64, 128, 256)
    return [
        {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8, "num_warps": w, "num_stages": s}
        for m, n, k, w, s in itertools.product(tiles, tiles, (32, 64, 128), (4, 8), (2, 3, 4, 5))
        if m * n <= 128 * 256
    ]


def moe_space() -> list[dict]:
    return [
        {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_warps": w, "num_stages": s}
        for m, n, k, w, s in itertools.product(
            (16, 32, 64, 128), (32, 64, 128, 256), (64, 128), (4, 8), (3, 4)
        )
    ]


def softmax_space() -> list[dict]:
    return [
        {"ROWS": r, "BLOCK_N": n, "num_warps": w, "num_stages": s}
        for r, n, w, s in itertools.product(
            (1, 2, 4, 8), (256, 512, 1024, 2048, 4096, 8192), (1, 2, 4, 8, 16), (1, 2, 3)
        )
        if 1 <= r * n // (32 * w) <= 64  # each thread holds 1..64 elements: no spills
    ]


SWEEPS = (  # name, kernel, module, space, extra arguments, share of the deadline
    ("matmul", "matmul16", MATMUL, matmul_space,
     ["--shape", "4096x4096x4096", "--shape", "8192x8192x512", "--shape", "256x4096x4096"], 0.42),
    ("moe", "moe_gemm", KERNELS, moe_space, [], 0.40),
    ("softmax", "softmax_rows", KERNELS, softmax_space, ["--dtype", "float16"], 0.18),
)  # fmt: skip


def sweep(out: Path, name: str, kernel: str, module: Path, space: list, extra: list,
          seconds: float, reports: Path) -> dict:  # fmt: skip
    """One exhaustive sweep within `seconds` (SIGTERM then: the CLI stops its job, which keeps
    its finished rows in the run folder); its result, whole or as far as it got."""
    (out / "space").mkdir(exist_ok=True)
    space_file = out / "space" / f"{name}.json"
    space_file.write_text(json.dumps(space))
    env = {**os.environ, "WORKBENCH_REPORTS": str(reports), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "workbench", "sweep", kernel, "--path", str(module),
           "--space", str(space_file), *extra, "--config-timeout", "30", "--json"]  # fmt: skip
    raw = out / "raw" / f"{name}.json"
    raw.parent.mkdir(exist_ok=True)
    start = time.monotonic()
    with raw.open("w") as stdout, (out / "raw" / f"{name}.log").open("w") as stderr:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=env, cwd=ROOT)
        try:
            code = proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
    wall = time.monotonic() - start
    try:
        result = json.loads(raw.read_text())["result"]
    except (ValueError, KeyError, TypeError):
        kept = sorted((reports / "runs").glob("*/sweep.json"), key=lambda p: p.stat().st_mtime)
        result = json.loads(kept[-1].read_text()) if kept else None
    print(f"{name}: exit {code} after {wall:.0f} s of {seconds:.0f}", file=sys.stderr)
    return {"result": result, "exit": code, "wall_s": round(wall, 1), "configs": len(space)}


def compact(result: dict) -> dict:
    """What replay and the analysis read of a sweep: its head, and per row the timings, the
    seconds they took and the static facts."""
    rows = []
    for row in result["rows"]:
        kept = {k: row.get(k) for k in ROW_KEYS}
        res = row.get("resources")
        kept["resources"] = {k: res[k] for k in RESOURCE_KEYS if k in res} if res else None
        if kept["problem"]:
            kept["problem"] = {k: kept["problem"].get(k) for k in ("kind", "cause")}
        rows.append(kept)
    triton = {s: {"label": t.get("label"), "seconds": t.get("seconds")}
              for s, t in (result.get("triton") or {}).items()}  # fmt: skip
    head = {k: result.get(k) for k in HEAD_KEYS}
    return {**head, "space": Path(str(head["space"])).name, "triton": triton, "rows": rows}


def replay(out: Path, name: str, fixture: Path) -> dict:
    folder = out / "replay"
    folder.mkdir(exist_ok=True)
    base = [sys.executable, "-m", "workbench", "sweep", "replay", str(fixture)]
    start = time.monotonic()
    done = subprocess.run([*base, "--json"], capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - start
    (folder / f"{name}.json").write_text(done.stdout or done.stderr)
    text = subprocess.run(base, capture_output=True, text=True, cwd=ROOT)
    (folder / f"{name}.txt").write_text(text.stdout + text.stderr)
    return {"exit": done.returncode, "wall_s": round(wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--deadline", type=float, default=500.0, help="seconds for the three sweeps")
    args = ap.parse_args()
    dest = Path(args.out)
    dest.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="record-spaces-"))
    (out / "spaces").mkdir()
    began = time.monotonic()
    report: dict = {"work": str(out)}
    for i, (name, kernel, module, make, extra, share) in enumerate(SWEEPS):
        left = args.deadline - (time.monotonic() - began)
        allotted = left * share / sum(s[-1] for s in SWEEPS[i:])  # an early finish passes time on
        reports = out / "reports" / name
        done = sweep(out, name, kernel, module, make(), extra, max(30.0, allotted), reports)
        done["allotted_s"] = round(allotted, 1)
        result = done.pop("result")
        if result:
            fixture = out / "spaces" / f"{name}.json"
            fixture.write_text(json.dumps(compact(result)))
            done["rows"], done["complete"] = len(result["rows"]), result.get("complete")
            done["replay"] = replay(out, name, fixture)
        report[name] = done
    report["total_s"] = round(time.monotonic() - began, 1)
    (out / "record_spaces.json").write_text(json.dumps(report, indent=2))
    (dest / "record_spaces.json").write_text(json.dumps(report, indent=2))
    with tarfile.open(dest / "spaces.tgz", "w:gz") as tar:
        for part in ("spaces", "replay", "raw", "space", "record_spaces.json"):
            if (out / part).exists():
                tar.add(out / part, arcname=part)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
