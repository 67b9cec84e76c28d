"""GPU goal 1: the sweep's wall time against @triton.autotune's first call with an empty cache,
same 16 configs (benchmarks/sweep_matmul16.py), same shape, same run; both winners printed.

Each side runs in its own process with a fresh TRITON_CACHE_DIR. The autotune side times only
the first call (its imports excluded); the sweep side reports the job's own phases (pool start,
compile + check + time = sweep_s; Triton's pick beside it = triton_s, excluded) and the whole CLI
wall. Goal: sweep <= 0.35 x autotune (stretch 0.2), same winner or one within noise.
Whole against whole: the user's script from `python` to its first autotuned call's end (its
torch import included) against the whole `sweep` command, and the command again with
`--no-triton-pick`, each from an empty cache; goal: the command <= 0.5 x the script.

    python benchmarks/sweep_vs_autotune.py --out DIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import MATMUL16, ROOT, out_folder, publish

sys.path.insert(0, str(ROOT))
from workbench.sweep.analysis import within_noise  # noqa: E402

AUTOTUNE = f"""
import importlib.util, json, time, torch
spec = importlib.util.spec_from_file_location("m16", {str(MATMUL16)!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
args = m.get_inputs(); torch.cuda.synchronize()
start = time.perf_counter(); m.kernel_fn(*args); torch.cuda.synchronize()
seconds = time.perf_counter() - start
c = m.matmul_kernel.best_config
print(json.dumps({{"seconds": seconds, "best": {{**c.kwargs, "num_warps": c.num_warps,
                  "num_stages": c.num_stages}}}}))
"""


def fresh_env(tmp: Path, name: str) -> dict:
    return {**os.environ, "TRITON_CACHE_DIR": str(tmp / name), "PYTHONPATH": str(ROOT)}


def main() -> None:
    out = out_folder()
    tmp = Path(tempfile.mkdtemp(prefix="sweep-vs-autotune-"))
    tuned = subprocess.run(
        [sys.executable, "-c", AUTOTUNE], env=fresh_env(tmp, "autotune"), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    autotune = json.loads(tuned.stdout.strip().splitlines()[-1])
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", AUTOTUNE], env=fresh_env(tmp, "script"), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    script_wall = time.perf_counter() - start

    def command(name: str, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "sweep", "matmul16", "--path", str(MATMUL16),
             "--json", *extra],
            env={**fresh_env(tmp, name), "WORKBENCH_REPORTS": str(out / "reports")},
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        return done, time.perf_counter() - began

    proc, cli_wall = command("sweep")
    _, unpicked_wall = command("sweep-unpicked", "--no-triton-pick")
    (out / "sweep_vs_autotune_cli.json").write_text(proc.stdout)
    result = json.loads(proc.stdout)["result"]
    shape = next(iter(result["shapes"]))
    info = result["shapes"][shape]
    t = result["timings"]
    sweep_s = t.get("pool_start_s", t.get("start_s", 0.0)) + t["sweep_s"]
    rows = {r["label"]: r for r in result["rows"]}
    auto_label = ",".join(f"{k}={v}" for k, v in autotune["best"].items())
    best, pick = rows.get(info["best"]), rows.get(auto_label)
    report = {
        "gpu": result["gpu"],
        "triton": result["triton_version"],
        "autotune_first_call_s": round(autotune["seconds"], 3),
        "sweep_s": round(sweep_s, 3),
        "ratio": round(sweep_s / autotune["seconds"], 3),
        "cli_wall_s": round(cli_wall, 3),
        "cli_ratio": round(cli_wall / autotune["seconds"], 3),
        "script_wall_s": round(script_wall, 3),
        "cli_vs_script": round(cli_wall / script_wall, 3),
        "cli_no_triton_pick_wall_s": round(unpicked_wall, 3),
        "cli_no_triton_pick_vs_script": round(unpicked_wall / script_wall, 3),
        "timings": t,
        "sweep_best": info["best"],
        "sweep_best_ms": info["best_ms"],
        "autotune_best": auto_label,
        "autotune_best_ms_in_sweep": pick and pick.get("ms"),
        "same_or_within_noise": bool(best and pick and (best is pick or within_noise(best, pick))),
        "in_run_triton_pick": info.get("triton"),
        "summary": result["summary"],
    }
    publish(report, out, "sweep_vs_autotune")


if __name__ == "__main__":
    main()
