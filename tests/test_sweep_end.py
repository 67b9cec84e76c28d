"""The sweep's end, on the CPU machine: the worker leaves without finalization once its result
is sent and leaves no process behind, the end says how long it waited on FLOP counts, pyplot is
imported while a timed sweep's workers run (and never for a static one), and the benchmark's
timeline of the whole command."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT

from workbench.catalog.discovery import discover
from workbench.run import jobs
from workbench.run.params import CheckParams, SweepParams
from workbench.sweep import spread

FINALIZED = "module finalized"
TWICE = f"""
import atexit, sys, time
import torch
import triton
import triton.language as tl

atexit.register(lambda: print({FINALIZED!r}, file=sys.stderr, flush=True))


@triton.autotune(
    configs=[triton.Config({{"BLOCK": 64}}, num_warps=1), triton.Config({{"BLOCK": 128}})],
    key=["n"],
)
@triton.jit
def _twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def kernel_fn(x):
    y = torch.empty_like(x)
    _twice[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y


def reference_fn(x):
    if x.is_meta:  # its FLOPs counted: slower than the sweep, so that its end waits
        time.sleep(4)
    return x * 2.0


def get_inputs():
    return [torch.randn(256, device="cuda")]
"""
"""A plain autotuned module whose process says when Python finalizes it, and whose FLOP count
(no formula: counted on meta inputs in a compile worker) outlasts its sweep."""


def processes_with(marker: str) -> list[int]:
    """The live processes whose command line holds `marker` (Linux's /proc; a zombie has none)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_sweep_worker_leaves_at_once_and_its_whole_group_goes_with_it(tmp_path):
    """The sweep-worker ends without Python's finalization once its result is sent (a check job
    of the same module finalizes it); the runner kills its group as it exits, so neither it nor
    one of its compile workers is left; its end waited for the FLOP count and says so."""
    module = tmp_path / "twice_end.py"
    module.write_text(TWICE)
    entry = discover([str(module)]).find("twice_end")
    seen: list[int] = []

    def on_event(event: dict) -> None:
        if event["event"] == "config" and not seen:  # the worker and its pool, mid-sweep
            seen.extend(processes_with(str(module)))

    result, outcomes = spread.run_sweep(entry, SweepParams(jobs=2), [], on_event, None, 240)
    assert len(seen) >= 3, seen  # the worker and two compile workers, all named by the module
    assert processes_with(str(module)) == []
    worker, sweep = outcomes
    assert (worker.job.kind, worker.status, sweep.status) == ("sweep-worker", "ok", "ok")
    assert worker.result is not None and FINALIZED not in worker.log, worker.log[-2000:]
    assert result is not None and result.summary["static"] == 2
    assert result.timings["count_wait_s"] >= 0.5, result.timings
    (counted,) = result.problems.values()
    assert counted["flops"] == 0.0  # x * 2.0: counted (no dot), not left out
    check = jobs.run_job(jobs.Job("check", entry, CheckParams(), 240))
    assert check.status == "ok" and FINALIZED in check.log, check.log[-2000:]


PNG = """
import json, sys
from workbench.sweep import plot
from workbench.sweep.result import SweepResult
data = json.loads(open(sys.argv[1]).read())["result"]
timed = SweepResult.from_dict(data)
static = SweepResult.from_dict(
    {**data, "rows": [{**r, "status": "static", "ms": None} for r in data["rows"]]}
)
print(plot.png(static, sys.argv[2]), "matplotlib" in sys.modules)
print(plot.png(timed, sys.argv[2]) == sys.argv[2], "matplotlib.pyplot" in sys.modules)
"""


def test_a_static_sweep_draws_no_png_and_imports_no_matplotlib(tmp_path):
    """Nothing timed, nothing to draw: matplotlib (a third of a second here) is not imported for
    it; the same sweep timed is drawn."""
    h100 = str(FIXTURES / "sweep_h100_matmul16.json")
    out = subprocess.run(
        [sys.executable, "-c", PNG, h100, str(tmp_path / "sweep.png")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.stdout.split() == ["None", "False", "True", "True"], out.stderr[-2000:]


PREFETCH = """
import sys, time
from workbench.catalog.discovery import discover
from workbench.run import jobs
from workbench.run.params import SweepParams
from workbench.runtime.errors import Problem
from workbench.sweep.spread import Runner

entry = discover([sys.argv[1]]).find("sweep_three_name")
params = SweepParams()
runner = Runner(entry, params, None, None, 60.0)
seen = []


def worker(name, stop):
    # a worker that waits on nothing but pyplot, for at most its wait (it says it was cancelled)
    deadline = time.monotonic() + float(sys.argv[2])
    while "matplotlib.pyplot" not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.02)
    seen.append("matplotlib.pyplot" in sys.modules)
    job = jobs.Job("sweep-worker", entry, params, 60.0)
    return jobs.Outcome(job, name, "", "cancelled", problem=Problem("cancelled", "-", "-"))


result, _ = runner.run({"local": worker})
print(seen, result, "matplotlib" in sys.modules)
"""


def test_a_timed_sweep_imports_pyplot_while_its_workers_run_and_a_static_one_never():
    """On a GPU host the runner starts pyplot's import as the sweep begins, so the plot at its
    end does not wait for it; without a GPU nothing is timed or drawn, and nothing imported."""
    three = str(FIXTURES / "sweep_three_name.py")

    def run(device: str, wait: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", PREFETCH, three, wait], capture_output=True, text=True,
            cwd=ROOT, timeout=120, env={**os.environ, "WORKBENCH_DEVICE": device},
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run("cuda", "60") == "[True] None True"
    assert run("cpu", "1") == "[False] None False"


def _benchmark():
    """benchmarks/sweep_vs_autotune.py as a module (its folder on sys.path, as when it runs)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        found = importlib.util.spec_from_file_location(
            "sweep_vs_autotune", ROOT / "benchmarks" / "sweep_vs_autotune.py"
        )
        assert found is not None and found.loader is not None
        module = importlib.util.module_from_spec(found)
        found.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_the_benchmarks_timeline_stamps_the_whole_command_from_launch_to_exit(tmp_path):
    """The timeline of a static sweep as a person runs it: every row's line, then the results
    line naming its run folder, then the exit, in that order; its split adds up to the exit."""
    bench = _benchmark()
    three = str(FIXTURES / "sweep_three_name.py")
    cmd = [sys.executable, "-m", "workbench", "sweep", "sweep_three_name", "--path", three]
    env = {**os.environ, "WORKBENCH_REPORTS": str(tmp_path / "r"), "WORKBENCH_DEVICE": "cpu"}
    run = bench.timeline(cmd, env)
    assert run["rc"] == 1 and run["rows"] == 3  # one config cannot compile
    stamps = [run[k] for k in ("first_row_s", "last_row_s", "results_s", "exit_s")]
    assert 0 < stamps[0] and stamps == sorted(stamps)
    assert "[3/3]" in run["log"] and "exit" in run["log"] and "BLOCK" in run["log"]
    kept = json.loads((Path(run["folder"]) / "sweep.json").read_text())
    split = bench.where(run, kept["timings"])
    assert 0 < split["cli_start_s"] and 0 < split["worker_start_s"]
    assert abs(sum(split.values()) - run["exit_s"]) < 0.01, split
