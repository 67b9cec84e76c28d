"""The sweep's work queue: the pure queue (hand-out order, blame, Triton's pick, rows in plan
order), then real workers on the CPU host (fake GPU ids: static sweeps, one worker process per
id) with uneven work, a worker killed mid-sweep, a config that kills every worker, a cancelled
sweep resumed, and a local Ray cluster beside the native path."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli

from workbench.catalog.discovery import discover
from workbench.run.params import SweepParams
from workbench.run.store import Store
from workbench.sweep import job, spread
from workbench.sweep.queue import END, TRIES, WorkQueue
from workbench.sweep.result import SweepResult

UNEVEN = str(FIXTURES / "sweep_uneven.py")
THREE_NAME = str(FIXTURES / "sweep_three_name.py")
SLOW = "BLOCK=1024,MODE=1,num_warps=4,num_stages=3"
VOLATILE = ("compile_s", "worker", "why", "hash")
"""Row keys that differ from run to run (or from worker to worker) for the same config."""


# -- the queue alone ---------------------------------------------------------------------------


def _head(gpu: str | None = "NVIDIA H200", index: str = "0") -> dict:
    return dict(kernel="k", mode="gpu", arch="sm_90", gpu=gpu, gpu_index=index, host="h",
                triton_version="3.9.0", dtype="float16", space="own", jobs=2,
                device={})  # fmt: skip


def _blank(shape: list, block: int) -> dict:
    values = {"BLOCK": block}
    return {"shape": shape, "label": f"BLOCK={block}", "values": values, "status": "ok",
            "reason": "", "compile_s": None, "resources": None, "ms": None, "p20": None,
            "p80": None, "samples": 0, "check": None, "problem": None}  # fmt: skip


def _plan(shape: list, blocks: list[int], triton: bool = False, last: bool = True) -> dict:
    configs = [{"row": _blank(shape, b), "todo": True} for b in blocks]
    return {"event": "plan", "shape": shape, "configs": configs, "triton": triton, "last": last}


def _timed(item: dict, ms: float) -> dict:
    row = {**_blank(item["shape"], item["values"]["BLOCK"]), "ms": ms, "p20": ms, "p80": ms}
    return {"event": "config", "id": item["id"], "row": row}


def _ask(work: WorkQueue, worker: str, n: int) -> list[tuple[str, dict]]:
    return work.on_event(worker, {"event": "want", "n": n})


def test_the_first_worker_to_ask_plans_and_items_go_out_in_plan_order():
    work = WorkQueue(120.0)
    work.on_event("a", {"event": "ready", "head": _head()})
    work.on_event("b", {"event": "ready", "head": _head(index="1")})
    assert _ask(work, "a", 2) == [("a", {"plan": True})]
    assert _ask(work, "b", 2) == []  # nothing to hand out until the plan comes: b waits
    answers = work.on_event("a", _plan([8], [16, 32, 64]))
    [(who, message)] = answers
    assert who == "b" and [i["values"]["BLOCK"] for i in message["items"]] == [16, 32]
    [(_, rest)] = _ask(work, "a", 2)
    assert [i["values"]["BLOCK"] for i in rest["items"]] == [64]
    # rows come out in plan order, whatever order they landed in
    work.on_event("a", _timed(rest["items"][0], 1.0))
    work.on_event("b", _timed(message["items"][1], 2.0))
    assert _ask(work, "a", 1) == []  # one item is still out: a may yet be needed
    ends = work.on_event("b", _timed(message["items"][0], 3.0))
    assert ends == [("a", END)] and work.finished
    result = work.result()
    assert [r["label"] for r in result.rows] == ["BLOCK=16", "BLOCK=32", "BLOCK=64"]
    assert [r["worker"] for r in result.rows] == ["b", "b", "a"]
    assert result.shapes["8"]["best"] == "BLOCK=64" and result.complete
    assert result.gpu_index == "0,1" and result.jobs == 4
    assert [s["rows"] for s in result.shards] == [1, 2]


def test_each_worker_keeps_to_a_shape_of_its_own_while_there_are_shapes_enough():
    """A worker captures a shape's launch and makes its inputs once: handing it the shape it is
    on (and another worker a shape nobody is on) spares every other worker that work."""
    work = WorkQueue(120.0)
    for w in ("a", "b"):
        work.on_event(w, {"event": "ready", "head": _head()})
    _ask(work, "a", 1)
    work.on_event("a", _plan([8], [16, 32, 64], last=False))
    work.on_event("a", _plan([9], [16, 32, 64], last=False))
    work.on_event("a", _plan([10], [16, 32]))
    shapes = {w: [i["shape"] for i in _ask(work, w, 2)[0][1]["items"]] for w in ("a", "b")}
    assert shapes == {"a": [[8], [8]], "b": [[9], [9]]}
    [(_, more)] = _ask(work, "a", 2)  # the rest of its own shape first, then a free one
    assert [i["shape"] for i in more["items"]] == [[8], [10]]
    [(_, last)] = _ask(work, "b", 3)  # its own shape's last, then what is left
    assert [i["shape"] for i in last["items"]] == [[9], [10]]


def test_a_dead_workers_items_go_back_first_and_only_the_running_one_is_blamed():
    work = WorkQueue(120.0)
    for w in ("a", "b"):
        work.on_event(w, {"event": "ready", "head": _head()})
    _ask(work, "a", 1)
    work.on_event("a", _plan([8], [16, 32, 64, 128]))
    [(_, held)] = _ask(work, "a", 3)
    work.on_event("a", {"event": "running", "id": held["items"][1]["id"]})
    work.ended("a", "crash")
    [(_, again)] = _ask(work, "b", 4)
    # the three it held, at the front and in their order, then the one nobody had taken
    assert [i["values"]["BLOCK"] for i in again["items"]] == [16, 32, 64, 128]
    assert [i.strikes for i in work.items] == [0, 1, 0, 0]
    # the config running at TRIES deaths is recorded as crashing; the rest run on
    for n in range(TRIES - 1):
        work.on_event("b", {"event": "running", "id": 1})
        work.ended("b" if n == 0 else f"b{n}", "crash")
    rows = {r["label"]: r for r in work.record().rows}
    assert rows["BLOCK=32"]["status"] == "failed"
    assert rows["BLOCK=32"]["problem"]["kind"] == "config-crash"
    assert [s["lost"] for s in work.record().shards][0] == ["BLOCK=16", "BLOCK=32", "BLOCK=64"]


def test_a_timed_out_config_is_blamed_at_once_and_an_error_strikes_no_bystander():
    work = WorkQueue(30.0)
    work.on_event("a", {"event": "ready", "head": _head()})
    _ask(work, "a", 1)
    work.on_event("a", _plan([8], [16, 32]))
    [(_, held)] = _ask(work, "a", 2)
    work.on_event("a", {"event": "config-timeout", "id": held["items"][0]["id"], "label": "x"})
    work.ended("a", "crash")
    [timeout] = work.record().rows
    assert timeout["status"] == "timeout" and "30 s" in timeout["problem"]["cause"]
    work.on_event("b", {"event": "ready", "head": _head()})
    [(_, held)] = _ask(work, "b", 1)
    work.ended("b", "error")  # it said what failed (a CUDA error's row went out before it)
    assert work.items[1].strikes == 0 and list(work.pending) == [1]


def test_triton_pick_waits_for_its_shapes_rows_then_goes_first():
    work = WorkQueue(120.0)
    work.on_event("a", {"event": "ready", "head": _head()})
    _ask(work, "a", 1)
    work.on_event("a", _plan([8], [16], triton=True, last=False))
    work.on_event("a", _plan([9], [16, 32], triton=True))
    [(_, first)] = _ask(work, "a", 2)
    assert [i.get("triton", False) for i in first["items"]] == [False, False]
    work.on_event("a", _timed(first["items"][0], 1.0))  # shape 8 is done: its pick is due
    [(_, second)] = _ask(work, "a", 2)
    assert second["items"][0] == {"id": 1, "shape": [8], "triton": True}
    assert second["best"] == {"8": 1.0}
    pick = {"label": "BLOCK=16", "seconds": 1.9, "timings": {}}
    work.on_event("a", {"event": "triton", "shape": "8", "pick": pick, "persisted": []})
    assert work.record().triton == {"8": pick}


def test_a_strategys_search_takes_its_shape_whole_and_is_taken_up_again_with_its_rows():
    work = WorkQueue(120.0)
    work.on_event("a", {"event": "ready", "head": _head()})
    _ask(work, "a", 4)
    work.on_event("a", {**_plan([8], [16, 32, 64]), "search": True})
    [(_, handed)] = _ask(work, "a", 4)
    [search] = handed["items"]  # one item for the shape, whatever the pool could take
    assert [c["values"]["BLOCK"] for c in search["search"]] == [16, 32, 64]
    first = search["search"][0]
    work.on_event("a", _timed({**first, "shape": [8]}, 2.0))
    work.on_event("a", _timed({**first, "shape": [8]}, 1.5))  # a later round of the same config
    assert work.record().rows[0]["ms"] == 1.5
    work.on_event("a", {"event": "running", "id": search["search"][1]["id"]})
    work.ended("a", "crash")
    work.on_event("b", {"event": "ready", "head": _head()})
    [(_, again)] = _ask(work, "b", 4)
    [search] = again["items"]
    assert search["search"][0]["row"]["ms"] == 1.5  # what the first search timed answers again
    assert [c["row"] for c in search["search"][1:]] == [None, None]
    for config in search["search"][1:]:
        work.on_event("b", _timed({**config, "shape": [8]}, 3.0))
    trace = {"configs": 3, "timed": 3}
    strategy = {"name": "random", "budget": {"evaluations": 3}, "seed": 0}
    work.on_event("b", {"event": "searched", "id": search["id"], "strategy": strategy,
                        "trace": trace})  # fmt: skip
    assert work.finished and work.record().strategy == {**strategy, "shapes": {"8": trace}}


def test_workers_on_different_gpu_models_end_the_sweep_before_any_row():
    work = WorkQueue(120.0)
    work.on_event("a", {"event": "ready", "head": _head("NVIDIA H200")})
    work.on_event("b", {"event": "ready", "head": _head("NVIDIA H100 80GB HBM3", "1")})
    assert work.failed.kind == "mixed-gpus" and "NVIDIA H100" in work.failed.cause
    assert sorted(_ask(work, "a", 1) + _ask(work, "b", 1)) == [("a", END), ("b", END)]


# -- real workers on the CPU host --------------------------------------------------------------


def _sweep(tmp_path, gpus: list[str], params: dict | None = None, **kw) -> tuple:
    """A sweep of the uneven fixture, its hooks' marks in tmp_path/marks."""
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    os.environ["SWEEP_UNEVEN_DIR"] = str(marks)  # the workers inherit it
    try:
        entry = discover([UNEVEN]).find("sweep_uneven")
        return spread.run_sweep(entry, SweepParams(jobs=1, **(params or {})), gpus, **kw), marks
    finally:
        del os.environ["SWEEP_UNEVEN_DIR"]


def _same(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory) -> list[dict]:
    """The uneven space swept by one worker, its hooks idle: the rows every way must give."""
    entry = discover([UNEVEN]).find("sweep_uneven")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_REPORTS", str(tmp_path_factory.mktemp("reports")))
        result, _ = spread.run_sweep(entry, SweepParams(jobs=1), [])
    assert result.complete and result.summary["static"] == 5
    return result.rows


def test_a_slow_config_holds_no_other_config_back(tmp_path, one_worker):
    (result, outcomes), marks = _sweep(tmp_path, ["0", "1"])
    # the slow config waited (in its worker) until the other worker had taken all four others
    assert (marks / "slow.waited").read_text() == "released"
    rows = {r["label"]: r for r in result.rows}
    slow = rows.pop(SLOW)
    assert all(r["worker"] != slow["worker"] for r in rows.values())
    assert result.complete and _same(result.rows) == _same(one_worker)
    assert [o.job.kind for o in outcomes] == ["sweep-worker", "sweep-worker", "sweep"]
    assert {s["gpu_index"] for s in result.shards} == {"0", "1"}
    saved = SweepResult.from_dict(
        json.loads((Path(outcomes[-1].run_dir) / "sweep.json").read_text())
    )
    assert _same(saved.rows) == _same(one_worker) and saved.complete
    [stored] = Store().history("sweep_uneven", kind="sweep")
    assert stored.id == outcomes[-1].run_id and stored.status == "ok"
    assert stored.params["workers"] == [o.run_id for o in outcomes[:2]]
    assert len(Store().history("sweep_uneven", kind="sweep-worker")) == 2


def test_a_worker_killed_mid_sweep_loses_only_what_it_held(tmp_path, one_worker):
    pid = tmp_path / "marks" / "slow.pid"

    def kill_the_slow_configs_worker() -> None:
        deadline = time.monotonic() + 120
        while not (pid.exists() and pid.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)  # the file exists a moment before its pid is written
        os.kill(int(pid.read_text()), signal.SIGKILL)  # the worker this test started

    killer = threading.Thread(target=kill_the_slow_configs_worker)
    killer.start()
    (result, outcomes), marks = _sweep(tmp_path, ["0", "1"])
    killer.join()
    assert result.complete and _same(result.rows) == _same(one_worker)
    [dead] = [s for s in result.shards if s["status"] == "crash"]
    assert dead["lost"] == [SLOW]  # what it held went back; nothing else was lost
    slow = next(r for r in result.rows if r["label"] == SLOW)
    assert slow["worker"] != dead["worker"]  # it ran again elsewhere
    assert [o.status for o in outcomes if o.job.kind == "sweep-worker"].count("crash") == 1
    assert outcomes[-1].status == "ok" and outcomes[-1].problem is None


def test_a_config_that_kills_every_worker_is_recorded_as_crashing(tmp_path):
    space = tmp_path / "space.txt"
    space.write_text("BLOCK=64,MODE=0,num_warps=4\nBLOCK=128,MODE=2,num_warps=4\n")
    (result, outcomes), _ = _sweep(tmp_path, [], {"space": str(space)})
    rows = {r["values"]["MODE"]: r for r in result.rows}
    assert rows[0]["status"] == "static" and result.complete
    assert rows[2]["status"] == "failed" and rows[2]["problem"]["kind"] == "config-crash"
    # its pre_hook said which config it prepared: only that one is blamed; the other, held
    # beside it at a death, went back and was done on a later worker
    statuses = [o.status for o in outcomes if o.job.kind == "sweep-worker"]
    assert statuses.count("crash") == TRIES and set(statuses[TRIES:]) <= {"ok"}, statuses


def test_a_cancelled_sweep_resumes_with_what_finished(tmp_path, one_worker):
    (tmp_path / "marks").mkdir()
    (tmp_path / "marks" / "hold").touch()  # the slow config stays: the cancel finds work left
    cancel = threading.Event()
    seen: list[dict] = []

    def first_row_then_cancel(event: dict) -> None:
        if event.get("event") == "config":
            seen.append(event["row"])
            cancel.set()

    (first, outcomes), _ = _sweep(tmp_path, ["0", "1"], on_event=first_row_then_cancel,
                                  cancel=cancel)  # fmt: skip
    assert outcomes[-1].status == "cancelled" and not first.complete
    kept = json.loads((Path(outcomes[-1].run_dir) / "sweep.json").read_text())
    assert 1 <= len(kept["rows"]) < 5
    resume = spread.resume_file("sweep_uneven")
    assert resume == str(Path(outcomes[-1].run_dir) / "sweep.json")
    (tmp_path / "marks" / "hold").unlink()
    (second, _), _ = _sweep(tmp_path, [], {"resume": resume})
    assert second.complete and _same(second.rows) == _same(one_worker)
    again = next(r for r in second.rows if r["label"] == kept["rows"][0]["label"])
    assert again["compile_s"] == kept["rows"][0]["compile_s"]  # taken over, not compiled again


def test_cluster_without_ray_says_how_to_get_it(tmp_path):
    code = (
        "import sys; sys.modules['ray'] = None; from workbench.cli.main import main; "
        f"sys.exit(main(['sweep', 'sweep_three_name', '--path', {THREE_NAME!r}, "
        "'--cluster', 'local']))"
    )
    env = {**os.environ, "WORKBENCH_REPORTS": str(tmp_path), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 2, out.stderr
    assert "Ray, which is not installed" in out.stderr and "pip install -e '.[ray]'" in out.stderr


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed: "
                    "pip install -e '.[ray]'")  # fmt: skip
def test_a_local_ray_cluster_gives_the_native_rows(tmp_path):
    args = ("sweep", "sweep_three_name", "--path", THREE_NAME, "--jobs", "2", "--json")
    env = {"WORKBENCH_REPORTS": str(tmp_path / "reports"), "WORKBENCH_DEVICE": "cpu"}
    native = json.loads(cli(*args, env=env).stdout)["result"]
    out = cli(*args, "--cluster", "local", env=env)
    ray = json.loads(out.stdout)["result"]
    assert ray["mode"] == native["mode"] == "cross-compile", out.stderr[-2000:]
    assert _same(ray["rows"]) == _same(native["rows"]) and len(ray["rows"]) == 3
    # the static sweep's compiles ran in the actor's process, on this host's one node
    runs = json.loads(out.stdout)["runs"]
    assert [r["kind"] for r in runs] == ["sweep-worker", "sweep"]
    assert runs[0]["artifacts"].startswith("ray:") and runs[0]["status"] == "ok"


def test_the_four_gpu_measurement_gives_one_gpus_rows_and_the_readme_says_its_ratios():
    """The H100x4 run of benchmarks/sweep_gpus.py: every run complete with one GPU's configs and
    statuses, the killed worker's configs re-run, the README's table is it, and every winner that
    differed is the one shape whose kernels are too short to rank across runs."""
    report = json.loads((FIXTURES / "sweep_gpus_h100x4.json").read_text())
    runs = report["runs"]
    assert set(runs) == {"first", "gpus_1", "gpus_2", "gpus_4", "ray_local_2", "gpus_2_after",
                         "killed"}  # fmt: skip
    readme = (ROOT / "README.md").read_text()
    for name, run in runs.items():
        same = run["same_as_one_gpu"]
        assert run["rc"] == 0 and run["complete"], name
        assert same["same_configs"] and not same["status_differs"], name
        assert all(w.startswith("256x4096x4096:") for w in same["winners_differ"]), name
    assert runs["killed"]["lost_configs_rerun"] and runs["killed"]["killed"]["gpu"] == "3"
    for run in (runs["gpus_2"], runs["gpus_4"], runs["gpus_2_after"], runs["killed"]):
        assert f"| {run['timings']['sweep_s']:.1f} s | {run['sweep_ratio']}x |" in readme
        assert f"{run['same_as_one_gpu']['winners_agree']}" in readme
    assert runs["gpus_1"]["timings"]["sweep_s"] >= 60  # a phase long enough to share out
    assert runs["gpus_2"]["sweep_ratio"] <= 0.55 and runs["gpus_4"]["sweep_ratio"] <= 0.30
    ray = runs["ray_local_2"]
    assert f"{ray['sweep_vs_native']}x of the native pair" in readme
    assert f"{ray['sweep_vs_native_after']}x the one run after it" in readme


def test_on_one_gpu_ray_costs_the_timing_phase_nothing_and_coordinate_finds_the_best_live():
    """The H100 run of sweep_gpus.py --workload matmul3 --strategy: Ray's one actor times as
    fast as the native worker, the same rows; coordinate descent, live, within 2 % of the
    exhaustive best at every shape after a quarter of the space, as the README says."""
    report = json.loads((FIXTURES / "sweep_gpus_h100x1.json").read_text())
    ray, searched = report["runs"]["ray_local_1"], report["runs"]["coordinate"]
    assert ray["complete"] and ray["same_as_one_gpu"]["same_configs"]
    assert not ray["same_as_one_gpu"]["status_differs"] and ray["sweep_vs_native"] <= 1.05
    readme = (ROOT / "README.md").read_text()
    for shape in searched["against_exhaustive"].values():
        assert shape["timed"] <= shape["of"] / 3.9 and shape["best_vs_exhaustive"] <= 1.02
        assert f"{shape['best_vs_exhaustive']}x" in readme


def test_the_readme_says_the_whole_commands_measured_time_against_the_users_script():
    """benchmarks/sweep_vs_autotune.py on the H100: the README's figures are that run's."""
    run = json.loads((FIXTURES / "sweep_vs_autotune_h100.json").read_text())
    readme = (ROOT / "README.md").read_text()
    assert run["same_or_within_noise"] and run["cli_no_triton_pick_vs_script"] < 1
    for said in (
        f"took {run['autotune_first_call_s']:.2f} s",
        f"took {run['sweep_s']:.2f} s ({run['ratio']:.2f}x)",
        f"took {run['script_wall_s']:.2f} s, the whole `sweep` command {run['cli_wall_s']:.2f} s",
        f"{run['cli_no_triton_pick_wall_s']:.2f} s with\n`--no-triton-pick`",
    ):
        assert said in readme, said
    slow = json.loads((FIXTURES / "sweep_vs_autotune_h100_slow.json").read_text())
    said = f"{slow['script_wall_s']:.2f} s against\n{slow['cli_no_triton_pick_wall_s']:.2f} s"
    assert said in readme and f"({slow['cli_no_triton_pick_vs_script']:.2f}x)" in readme, said
    ratios = [p["ratio"] for p in run["pairs"] + slow["pairs"]]
    ratios += [run["cli_no_triton_pick_vs_script"], slow["cli_no_triton_pick_vs_script"]]
    assert sum(r <= 0.5 for r in ratios) == 6 and sorted(ratios)[3] <= 0.46 <= sorted(ratios)[4]


def test_a_ray_actors_worker_that_crashes_says_why(tmp_path, monkeypatch):
    """The actor runs the worker as a child of its own (as `spread` does, apart from Ray's
    threads and environment): a child that dies at its start ends the actor's stream with the
    crash's cause, and the child has the driver's OMP_NUM_THREADS (none), not Ray's 1."""
    from workbench.sweep.cluster import SweepActor

    module, probe = tmp_path / "dies.py", tmp_path / "omp.txt"
    module.write_text(
        "import os, pathlib\n"
        f"pathlib.Path({str(probe)!r}).write_text(os.environ.get('OMP_NUM_THREADS', 'unset'))\n"
        "os._exit(3)\n"
    )
    monkeypatch.setenv("WORKBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("WORKBENCH_DEVICE", "cpu")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Ray sets in an actor
    params = SweepParams().to_dict()
    batches = SweepActor().run(str(module), "dies", params, {"OMP_NUM_THREADS": None}, 60)
    events = [e for batch in batches for e in batch]
    assert probe.read_text() == "unset"
    assert events[-1]["event"] == "error", events
    assert "exited with status 3" in events[-1]["problem"]["cause"]


def test_a_flop_count_that_did_not_land_leaves_a_note_and_no_facts():
    """A timed sweep's worker ends without a FLOP count still under way (a first count on the
    meta device takes seconds): its `problem` event then carries only a note, which the result
    keeps, and the shape's planned facts stand."""
    work = WorkQueue(120.0)
    work.on_event("a", {"event": "ready", "head": _head()})
    _ask(work, "a", 1)
    plan = {**_plan([8], [16]), "problem": {"sizes": {"n": 8}, "flops": None, "elsize": 2}}
    work.on_event("a", plan)
    [(_, message)] = _ask(work, "a", 1)
    note = job.UNCOUNTED.format(shape="8")
    work.on_event("a", {"event": "problem", "shape": [8], "notes": [note]})
    work.on_event("a", _timed(message["items"][0], 1.0))
    work.on_event("a", {"event": "result", "result": {"timings": {}}})
    result = work.result()
    assert result is not None and note in result.notes and note.startswith("8: ")
    assert result.problems["8"] == {"sizes": {"n": 8}, "flops": None, "elsize": 2}
    assert job.COUNT_WAIT_S["timed"] < 1.0 <= job.COUNT_WAIT_S["static"]


def test_the_runner_draws_the_plot_as_the_last_row_lands_and_again_only_if_it_changed(
    tmp_path, monkeypatch
):
    """A timed sweep's PNG is begun when its last row lands (while the workers end), taken as
    it is when the result draws the same, and drawn again when something it shows changed."""
    from workbench.sweep import plot

    monkeypatch.setenv("WORKBENCH_REPORTS", str(tmp_path))
    drawn: list[str] = []
    real_png = plot.png
    monkeypatch.setattr(plot, "png", lambda r, p: drawn.append(plot.key(r)) or real_png(r, p))
    entry = discover([str(FIXTURES / "sweep_three_name.py")]).find("sweep_three_name")
    runner = spread.Runner(entry, SweepParams(), None, None, 60.0)
    runner.event("a", {"event": "ready", "head": _head()})
    runner.event("a", {"event": "want", "n": 2})
    runner.event("a", _plan([8], [16, 32]))
    [(_, message)] = _ask(runner.queue, "a", 2)
    first, second = message["items"]
    runner.event("a", _timed(first, 2.0))
    assert runner.drawing is None  # a row is still out
    runner.event("a", _timed(second, 1.0))
    assert runner.drawing is not None
    result = runner.queue.result()
    assert result is not None
    path = runner._plot(result)
    assert path is not None and Path(path).stat().st_size > 0 and len(drawn) == 1
    result.rows[0]["ms"] = 3.0
    assert runner._plot(result) == path and len(drawn) == 2
