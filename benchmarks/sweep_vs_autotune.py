"""GPU goal 1: the sweep's wall time against @triton.autotune's first call with an empty cache,
same 16 configs (benchmarks/sweep_matmul16.py), same shape, same run; both winners printed.

Each side runs in its own process with a fresh TRITON_CACHE_DIR. The autotune side times only
the first call (its imports excluded); the sweep side reports the job's own phases (pool start,
compile + check + time = sweep_s; Triton's pick beside it = triton_s, excluded) and the whole CLI
wall. Goal: sweep <= 0.35 x autotune (stretch 0.2), same winner or one within noise.
Whole against whole: the user's script from `python` to its first autotuned call's end (its
torch import included) against the whole `sweep` command, and the command again with
`--no-triton-pick`, each from an empty cache; goal: the command <= 0.5 x the script.

Where the command's seconds go: each run of it is the command as a person runs it (no --json:
its table on stdout, a progress line per row on stderr), each stderr line stamped as it lands
(`timeline`: first row, last row, the line naming its results, the exit), split with the queue's
own timings (`where`); beside them this host's bare `python`, `import torch` and
`import matplotlib.pyplot`. Each run's stamped lines and table are kept as DIR/NAME.log.
Then PAIRS more times, the script and the command with `--no-triton-pick` one after the other
(`pairs`, each ratio and their median): one pair is one draw of the host's noise.

    python benchmarks/sweep_vs_autotune.py --out DIR
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import MATMUL16, ROOT, out_folder, publish

sys.path.insert(0, str(ROOT))
from workbench.sweep.analysis import RESULT_FILE, within_noise  # noqa: E402
from workbench.sweep.result import SweepResult  # noqa: E402

ROW = re.compile(r"\s*\[\d+/\d+\] ")
"""A progress line: one row has landed."""
RESULTS = re.compile(r"results \(sweep\.json.*\) in (?P<folder>.+)$")
"""The command's last line on stderr: its run folder."""
HOST = {
    "python_s": "pass",
    "import_torch_s": "import torch",
    "import_pyplot_s": "import matplotlib.pyplot",
}
"""This host's bare costs, each a fresh `python -c` from launch to exit."""
PAIRS = 3

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


def timeline(cmd: list[str], env: dict[str, str]) -> dict:
    """Run the `sweep` command as a person does and stamp each line of its stderr as it lands,
    seconds from the launch: when the first row and the last landed, when it named its run
    folder, when it exited; its stamped stderr and its table kept as `log`."""
    with tempfile.TemporaryFile() as table:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=table, stderr=subprocess.PIPE,
                                text=True)  # fmt: skip
        assert proc.stderr is not None
        lines = [(time.perf_counter() - began, line.rstrip("\n")) for line in proc.stderr]
        proc.wait()
        exit_s = time.perf_counter() - began
        table.seek(0)
        printed = table.read().decode(errors="replace")
    rows = [t for t, line in lines if ROW.match(line)]
    said = [(t, m["folder"]) for t, line in lines if (m := RESULTS.match(line))]
    log = "\n".join(f"{t:8.3f}  {line}" for t, line in lines) + f"\n{exit_s:8.3f}  exit\n"
    if not rows or not said:
        raise SystemExit(f"{' '.join(cmd)} ended {proc.returncode} without its results:\n{log}")
    return {
        "rc": proc.returncode,
        "rows": len(rows),
        "first_row_s": round(rows[0], 3),
        "last_row_s": round(rows[-1], 3),
        "results_s": round(said[-1][0], 3),
        "exit_s": round(exit_s, 3),
        "folder": said[-1][1],
        "log": f"{log}\n{printed}",
    }


def where(run: dict, timings: dict[str, float]) -> dict[str, float]:
    """The run's wall split, adding up to its exit: the command's own start (to its queue's
    start), the worker's start (to ready), the plan, the timing phase (first item out to the
    last row in), the end (last row to the results line: the worker's end and exit, the plot,
    the records, the table) and the command's exit. The queue's end is taken as the last row's
    line: where Triton's pick ends after it, its seconds count in the end, not the start."""
    begun = run["last_row_s"] - timings["total_s"]
    split = {
        "cli_start_s": begun,
        "worker_start_s": timings["start_s"],
        "plan_s": timings["total_s"] - timings["start_s"] - timings["sweep_s"],
        "sweep_s": timings["sweep_s"],
        "end_s": run["results_s"] - run["last_row_s"],
        "exit_s": run["exit_s"] - run["results_s"],
    }
    return {k: round(v, 3) for k, v in split.items()}


def host_costs(env: dict[str, str]) -> dict[str, float]:
    """HOST's walls on this host, now."""
    out = {}
    for name, code in HOST.items():
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        out[name] = round(time.perf_counter() - began, 3)
    return out


def main() -> None:
    out = out_folder()
    tmp = Path(tempfile.mkdtemp(prefix="sweep-vs-autotune-"))
    tuned = subprocess.run(
        [sys.executable, "-c", AUTOTUNE], env=fresh_env(tmp, "autotune"), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    autotune = json.loads(tuned.stdout.strip().splitlines()[-1])

    def script(name: str) -> float:
        """The user's script from launch to exit, from an empty cache of its own."""
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", AUTOTUNE], env=fresh_env(tmp, name), capture_output=True,
            text=True, check=True,
        )  # fmt: skip
        return time.perf_counter() - start

    script_wall = script("script")

    host = host_costs(fresh_env(tmp, "host"))

    def command(name: str, *extra: str) -> tuple[dict, dict]:
        """(the run's timeline, its result as sweep.json keeps it)."""
        cmd = [sys.executable, "-m", "workbench", "sweep", "matmul16", "--path", str(MATMUL16),
               *extra]  # fmt: skip
        env = {**fresh_env(tmp, name), "WORKBENCH_REPORTS": str(out / "reports")}
        run = timeline(cmd, env)
        (out / f"{name}.log").write_text(run.pop("log"))
        kept = json.loads((Path(run["folder"]) / RESULT_FILE).read_text())
        return run, SweepResult.from_dict(kept).to_dict()

    picked, result = command("sweep")
    unpicked, unpicked_result = command("sweep-unpicked", "--no-triton-pick")
    pairs = []
    for n in range(PAIRS):
        script_s = script(f"script-{n}")
        command_s = command(f"sweep-unpicked-{n}", "--no-triton-pick")[0]["exit_s"]
        pairs.append({"script_s": round(script_s, 3), "command_s": command_s,
                      "ratio": round(command_s / script_s, 3)})  # fmt: skip
    (out / "sweep_vs_autotune_cli.json").write_text(json.dumps({"result": result}, indent=2))
    cli_wall, unpicked_wall = picked["exit_s"], unpicked["exit_s"]
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
        "pairs": pairs,
        "pairs_median_ratio": statistics.median(p["ratio"] for p in pairs),
        "timings": t,
        "sweep_best": info["best"],
        "sweep_best_ms": info["best_ms"],
        "autotune_best": auto_label,
        "autotune_best_ms_in_sweep": pick and pick.get("ms"),
        "same_or_within_noise": bool(best and pick and (best is pick or within_noise(best, pick))),
        "in_run_triton_pick": info.get("triton"),
        "summary": result["summary"],
        "host": host,
        "timeline": {"sweep": picked, "sweep_no_triton_pick": unpicked},
        "where": {
            "sweep": where(picked, t),
            "sweep_no_triton_pick": where(unpicked, unpicked_result["timings"]),
        },
    }
    publish(report, out, "sweep_vs_autotune")


if __name__ == "__main__":
    main()
