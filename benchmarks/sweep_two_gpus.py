"""GPU goal 2: the timing phase of a 64-config sweep on 2 GPUs against 1 GPU (goal <= 0.6x).

64 configs of benchmarks/sweep_matmul16.py's kernel (a file space written beside the results),
swept with --gpus 0 and with --gpus 0,1, each from a fresh Triton cache ("cold": configs are
timed as they finish compiling, so the CPU cores bound both), then each again on its now warm
cache ("warm": the GPUs bound it). timing_s is the time spent checking and timing configs (for
2 GPUs, the slower shard's); sweep_s the whole phase.

    python benchmarks/sweep_two_gpus.py --out DIR
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import MATMUL16, ROOT, out_folder, publish


def space64() -> list[dict]:
    tiles = (64, 128, 256)
    out = []
    for bm, bn, bk, w, s in itertools.product(tiles, tiles, (32, 64), (4, 8), (3, 4)):
        if not (bm == 256 and bn == 256):
            out.append({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
                        "num_warps": w, "num_stages": s})  # fmt: skip
    return out


def sweep(gpus: str, space: Path, out: Path, tmp: Path, run: str) -> dict:
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp / gpus.replace(",", "_")),
           "WORKBENCH_REPORTS": str(out / "reports"), "PYTHONPATH": str(ROOT)}  # fmt: skip
    cmd = [sys.executable, "-m", "workbench", "sweep", "matmul16", "--path", str(MATMUL16),
           "--space", str(space), "--gpus", gpus, "--json"]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    (out / f"sweep_gpus_{gpus.replace(',', '_')}_{run}.json").write_text(proc.stdout)
    return json.loads(proc.stdout)["result"]


def main() -> None:
    out = out_folder()
    space = out / "space64.json"
    space.write_text(json.dumps(space64()))
    tmp = Path(tempfile.mkdtemp(prefix="sweep-two-gpus-"))
    report: dict = {}
    for run in ("cold", "warm"):
        one, two = sweep("0", space, out, tmp, run), sweep("0,1", space, out, tmp, run)
        t1, t2 = one["timings"], two["timings"]
        report[run] = {
            "gpus": [one["gpu"], two["gpu"]],
            "configs": one["summary"]["configs"],
            "one_gpu": t1,
            "two_gpus": t2,
            "shards": two.get("shards"),
            "timing_ratio": round(t2["timing_s"] / t1["timing_s"], 3),
            "sweep_ratio": round(t2["sweep_s"] / t1["sweep_s"], 3),
            "best": [one["summary"]["best"], two["summary"]["best"]],
        }
    publish(report, out, "sweep_two_gpus")


if __name__ == "__main__":
    main()
