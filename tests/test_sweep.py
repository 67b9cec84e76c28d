"""The sweep on the CPU machine: real cross-compiles of every config in the compile pool, their
resources, pruning, failure rows, resume after a cancelled run, and the pure read-back."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest
import triton
import triton.language as tl
from conftest import FIXTURES, ROOT, cli, cpu_cli
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static
from triton import knobs

from workbench.catalog.discovery import discover
from workbench.run import jobs
from workbench.run.params import SweepParams
from workbench.runtime.errors import WorkbenchError
from workbench.sweep import analysis, space, tuner
from workbench.sweep.result import SweepResult
from workbench.tui.tabs.sweep import SweepPane
from workbench.views.finished import Finished, sweep_lines

THREE_NAME = str(FIXTURES / "sweep_three_name.py")
MATMUL_SPACE = str(FIXTURES / "sweep_matmul_space.txt")


@pytest.fixture(scope="module")
def three_name(tmp_path_factory) -> dict:
    """The plain @triton.autotune module, swept as a user would (--json)."""
    out, _ = cpu_cli(tmp_path_factory, "sweep", "sweep_three_name", "--path", THREE_NAME, "--json")
    assert out.returncode == 1, out.stderr  # one config cannot compile
    return json.loads(out.stdout)


@pytest.mark.versions
def test_own_configs_of_a_plain_autotune_module_compile_with_resources(three_name):
    result = three_name["result"]
    assert result["mode"] == "cross-compile" and result["arch"] == "sm_90"
    rows = {r["values"]["BLOCK"]: r for r in result["rows"]}
    assert sorted(rows) == [96, 256, 1024]
    for block in (256, 1024):
        row = rows[block]
        assert row["status"] == "static" and row["compile_s"] > 0
        res = row["resources"]
        assert res["regs"] > 0 and res["spill_bytes"] == 0
        assert res["occupancy"]["percent"] > 0 and res["occupancy"]["limiter"]
        assert res["num_warps"] == row["values"]["num_warps"]
    # the grid as the kernel computes it, and what the static model reads of the shape
    assert (rows[256]["programs"], rows[1024]["programs"]) == ((1 << 20) // 256, (1 << 20) // 1024)
    [facts] = result["problems"].values()
    assert facts == {"sizes": {"n": 1 << 20}, "flops": 0.0, "elsize": 4}  # x * 2.0: no dot
    bad = rows[96]
    assert bad["status"] == "failed" and bad["problem"]["kind"] == "compile-error"
    assert "power of 2" in bad["why"]
    assert result["summary"]["failed"] == 1 and result["complete"]


def test_the_result_reads_back_as_the_cli_printed_it(three_name):
    printed = three_name["result"]
    result = SweepResult.from_dict(printed)
    assert result.to_dict() == printed
    assert SweepResult.from_dict(result.to_dict()) == result
    assert result.summary["failed"] == 1 and len(result.rows) == 3 and result.plot is None


@pytest.mark.versions
def test_a_file_space_prunes_what_cannot_fit_and_records_what_cannot_compile():
    out = cli(
        "sweep",
        "matmul",
        "--path",
        str(ROOT / "kernels"),
        "--space",
        MATMUL_SPACE,
        "--shape",
        "256x256x256",
        "--dtype",
        "float16",
        "--json",
    )
    result = json.loads(out.stdout)["result"]
    rows = {r["values"]["BLOCK_K"]: r for r in result["rows"]}
    assert rows[32]["status"] == "static" and rows[32]["programs"] == (256 // 64) ** 2
    facts = result["problems"]["256x256x256"]
    assert {k: facts["sizes"][k] for k in "MNK"} == {"M": 256, "N": 256, "K": 256}
    assert facts["flops"] == 2 * 256**3 and facts["elsize"] == 2
    assert rows[128]["status"] == "pruned" and "does not fit the arch" in rows[128]["why"]
    assert rows[128]["resources"]["occupancy"]["limiter"] == "launch"
    assert rows[48]["status"] == "failed"


def test_arch_outside_ptxas_is_refused_with_the_choices():
    out = cli("sweep", "sweep_three_name", "--path", THREE_NAME, "--arch", "sm_20")
    assert out.returncode == 2 and "sm_20" in out.stderr and "sm_90" in out.stderr


HELD = (
    Path(THREE_NAME)
    .read_text()
    .replace(
        'triton.Config({"BLOCK": 1024}, num_warps=8),',
        'triton.Config({"BLOCK": 1024}, num_warps=8, pre_hook=_hold),',
    )
    .replace(
        "@triton.autotune(",
        """_seen = set()


def _hold(nargs):  # from its second call (the first is the capture's), while SWEEP_HELD is there
    start = time.monotonic()
    while "prepared" in _seen and os.path.exists(os.environ["SWEEP_HELD"]):
        if time.monotonic() - start > 60:
            break
        time.sleep(0.05)
    _seen.add("prepared")


@triton.autotune(""",
    )
    .replace("import torch", "import os\nimport time\n\nimport torch")
)
"""sweep_three_name with its 1024 config held as the sweep prepares it, while the file that
SWEEP_HELD names is there: a sweep cancelled at its first row has rows still to come, however
fast the others compile."""


def test_resume_after_a_cancelled_run_keeps_finished_configs(tmp_path, monkeypatch):
    (tmp_path / "sweep_held.py").write_text(HELD.replace("_scale", "_held"))
    held = tmp_path / "held"
    held.touch()
    monkeypatch.setenv("SWEEP_HELD", str(held))
    entry = discover([str(tmp_path / "sweep_held.py")]).find("sweep_held")
    params = SweepParams(jobs=1)
    cancel = threading.Event()
    seen: list[dict] = []

    def on_event(event: dict) -> None:
        if event.get("event") == "config":
            seen.append(event["row"])
            cancel.set()  # stop after the first finished config

    first = jobs.run_job(jobs.Job("sweep", entry, params), on_event, cancel)
    assert first.status == "cancelled"
    kept = json.loads((tmp_path / "reports" / "runs" / first.run_id / "sweep.json").read_text())
    assert 1 <= len(kept["rows"]) < 3 and not kept["complete"]
    from workbench.sweep import spread

    resume = spread.resume_file("sweep_held")
    assert resume and first.run_id in resume
    held.unlink()
    second = jobs.run_job(jobs.Job("sweep", entry, replace(params, resume=resume)))
    assert second.status == "ok"
    rows = second.result["rows"]
    assert sorted(r["values"]["BLOCK"] for r in rows) == [96, 256, 1024]
    again = next(r for r in rows if r["label"] == kept["rows"][0]["label"])
    # taken over, not recompiled
    explained = {k: again[k] for k in ("why", "brief", "model")}
    assert again == {**kept["rows"][0], **explained}


def test_generated_space_spans_tiles_warps_and_stages():
    configs = space.generate({"BLOCK_M": 64, "BLOCK_N": 128, "GROUP_M": 8, "num_warps": 4})
    assert len(configs) == 3 * 3 * 2 * 3
    assert {c["BLOCK_M"] for c in configs} == {32, 64, 128}
    assert {c["GROUP_M"] for c in configs} == {8}  # not a tile: kept
    with pytest.raises(WorkbenchError, match="no BLOCK"):
        space.generate({"N": 7})
    # a one-dimensional block beyond a 2-D tile's range keeps its own: 4096 was an empty space
    wide = space.generate({"BLOCK": 4096, "num_warps": 8})
    assert {c["BLOCK"] for c in wide} == {2048, 4096, 8192} and len(wide) == 3 * 2 * 3
    assert {c["BLOCK_M"] for c in space.generate({"BLOCK_M": 256})} == {128, 256}


def test_config_files_json_and_text(tmp_path):
    j = tmp_path / "c.json"
    j.write_text('[{"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_ctas": 1}, {"BLOCK": 32}]')
    assert space.from_file(str(j)) == [{"BLOCK": 64, "num_warps": 4}, {"BLOCK": 32}]
    assert space.from_file(MATMUL_SPACE)[1]["BLOCK_K"] == 128
    j.write_text('{"BLOCK": 64}')
    with pytest.raises(WorkbenchError, match="not a list of configs"):
        space.from_file(str(j))
    with pytest.raises(WorkbenchError, match="no such file"):
        space.from_file(str(tmp_path / "missing.json"))


def _timed(shape, label, ms, spread=0.0, **res):
    return {
        "shape": shape,
        "label": label,
        "values": {"L": label},
        "status": "ok",
        "ms": ms,
        "p20": ms - spread,
        "p80": ms + spread,
        "resources": res or None,
    }


def test_minimal_set_is_the_smallest_cover_within_five_percent():
    rows = [
        _timed([1], "a", 1.00),
        _timed([1], "b", 1.04),
        _timed([1], "c", 1.50),
        _timed([2], "a", 2.00),
        _timed([2], "b", 3.00),
        _timed([2], "c", 1.90),
        _timed([3], "a", 9.00),
        _timed([3], "b", 1.00),
        _timed([3], "c", 1.02),
    ]
    assert sorted(analysis.minimal_set(rows)) == ["b", "c"]
    assert analysis.minimal_set([_timed([1], "a", 1.0)]) == ["a"]


def test_losers_are_explained_from_their_facts():
    occ = {"percent": 12.5, "limiter": "registers"}
    best = _timed([1], "best", 1.0, occupancy={"percent": 50.0, "limiter": "warps"})
    spill = _timed([1], "spill", 1.5, spill_bytes=64, occupancy=occ)
    plain = _timed([1], "plain", 1.3, occupancy={"percent": 50.0, "limiter": "warps"})
    close = _timed([1], "close", 1.01, 0.02)
    assert analysis.explain(best, best) == "best"
    assert analysis.explain(spill, best) == (
        "50% slower: spills 64 bytes/thread; occupancy capped at 12.5% by registers"
    )
    assert "no static reason" in analysis.explain(plain, best)
    assert "within noise" in analysis.explain(close, best)


def _result(**recorded) -> SweepResult:
    """A GPU sweep's result read back from what its job recorded."""
    head = dict(kernel="k", mode="gpu", arch="sm_90", gpu="NVIDIA H200", gpu_index=None)
    head |= dict(triton_version="3.4.0", dtype="float16", space="own", jobs=2, shard=None)
    return SweepResult.from_dict(head | recorded)


def test_triton_disagreement_beyond_noise_is_a_finding():
    rows = [_timed([1], "a", 1.0), _timed([1], "b", 1.3)]
    result = _result(rows=rows, triton={"1": {"label": "b"}})
    assert "30% slower than a" in result.shapes["1"]["finding"]
    result = _result(rows=[_timed([1], "a", 1.0), _timed([1], "b", 1.01)], triton=result.triton)
    assert result.shapes["1"]["finding"] == ""


async def test_sweep_pane_shows_live_rows_and_a_finished_sweep(three_name):
    result = three_name["result"]

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield SweepPane()

    async with Host().run_test(size=(160, 40)) as pilot:
        pane = pilot.app.query_one(SweepPane)
        pane.add_event({"event": "progress", "done": 0, "total": 3, "case": ""})
        for row in result["rows"]:
            pane.add_event({"event": "config", "row": row})
        await pilot.pause()
        assert pane.query_one(DataTable).row_count == 3
        # as a GPU run would time them: the two that compiled get times
        times = {256: 0.2, 1024: 0.1}
        rows = [
            dict(r, status="ok", ms=m, p20=m, p80=m)
            if (m := times.get(r["values"]["BLOCK"]))
            else r
            for r in result["rows"]
        ]
        done = SweepResult.from_dict(result | {"rows": rows})
        pane.clear()  # what Pane.show does before it renders a finished result
        pane.render_result(done, Finished("sweep", "sweep_three_name", "ok"))
        notes = sweep_lines(done)
        assert notes[0].startswith("sweep sweep_three_name: 3 config(s) x 1 shape(s)")
        assert notes[1].startswith("best")
        await pilot.pause()
        plot = pane.query_one("#sweep-plot", Static).render()
        assert "█" in str(plot) and "ms" in str(plot)
        assert pane.query_one(DataTable).row_count == 3
        snippet = str(pane.query_one("#sweep-notes", Static).render())
        assert "triton.Config({'BLOCK': 1024}, num_warps=8, num_stages=3)" in snippet


@pytest.mark.versions
def test_configs_the_kernels_own_prune_drops_are_shown_pruned_not_compiled():
    path = str(FIXTURES / "sweep_pruned.py")
    out = cli("sweep", "sweep_pruned", "--path", path, "--json", env={"WORKBENCH_DEVICE": "cpu"})
    rows = {r["values"]["BLOCK"]: r for r in json.loads(out.stdout)["result"]["rows"]}
    assert out.returncode == 0, out.stderr
    assert rows[4096]["status"] == "pruned" and "prune_configs_by" in rows[4096]["reason"]
    assert rows[4096]["resources"] is None  # never compiled
    assert rows[256]["status"] == rows[512]["status"] == "static"


@pytest.mark.versions
def test_the_kernels_own_prune_also_drops_configs_of_a_generated_space(tmp_path):
    """A generated space may hold configs the kernel says it cannot run (its early_config_prune):
    they are shown pruned by the kernel, not compiled, checked and called wrong."""
    path = str(FIXTURES / "sweep_pruned.py")
    space = tmp_path / "space.json"
    space.write_text(json.dumps([{"BLOCK": b, "num_warps": 4} for b in (128, 1024, 2048)]))
    out = cli("sweep", "sweep_pruned", "--path", path, "--space", str(space), "--json",
              env={"WORKBENCH_DEVICE": "cpu"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = {r["values"]["BLOCK"]: r for r in json.loads(out.stdout)["result"]["rows"]}
    for block in (1024, 2048):
        assert rows[block]["status"] == "pruned", rows[block]
        assert "prune_configs_by" in rows[block]["reason"] and rows[block]["resources"] is None
    assert rows[128]["status"] == "static"


@triton.jit
def _l2_norm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x / tl.sqrt(tl.sum(x * x)), mask=offs < n)


def test_triton_autotune_cache_entries_of_option_only_configs_read_back(tmp_path, monkeypatch):
    """Triton keeps a tuning on disk as each Config's __dict__, its kwargs beside its options;
    configs that set only num_warps (triton.Config({}, num_warps=w)) are read back as the
    sweep labels them, the fastest being the entry Triton would serve."""
    configs = [triton.Config({}, num_warps=w) for w in (1, 2, 4)]
    autotuner = triton.autotune(configs=configs, key=["n"])(_l2_norm_kernel)
    entry = tmp_path / "0123abcd" / "_l2_norm_kernel.autotune.json"
    entry.parent.mkdir()
    stored = [(c.__dict__, [ms, ms, ms]) for c, ms in zip(configs, (0.031, 0.012, 0.020))]
    entry.write_text(json.dumps({"key": [1024, "torch.float32"], "configs_timings": stored}))
    monkeypatch.setattr(knobs.cache, "dir", str(tmp_path))
    (found,) = tuner.persisted(autotuner)
    assert (found["label"], found["ms"]) == ("num_warps=2,num_stages=3", 0.012)
    assert found["key"] == [1024, "torch.float32"] and found["file"] == str(entry)


def test_the_progress_line_names_a_config_only_once_one_runs(capsys):
    from workbench.cli.sweep import Progress

    progress = Progress()
    progress({"event": "progress", "done": 0, "total": 3, "case": "-"})
    progress({"event": "progress", "done": 0, "total": 3, "case": ""})
    progress({"event": "progress", "done": 1, "total": 3, "case": "BLOCK=64,num_warps=4"})
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == ["  [0/3] ETA -", "  [0/3] ETA -"]
    assert lines[2].startswith("  [1/3] ETA ") and lines[2].endswith(" s  BLOCK=64,num_warps=4")


COUNTED = """
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4)], key=["n"])
@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def kernel_fn(a, b):
    y = torch.empty_like(a)
    _copy[lambda meta: (triton.cdiv(a.numel(), meta["BLOCK"]),)](a, y, a.numel())
    return a @ b


def reference_fn(a, b):
    return a @ b


def get_inputs():
    return [torch.randn(64, 32, device="cuda"), torch.randn(32, 16, device="cuda")]
"""


def test_a_reference_without_a_flop_formula_is_counted_beside_the_sweep(tmp_path):
    """No `flops` in the module: its reference's FLOPs are counted on meta inputs in a compile
    worker (the meta device's first use costs seconds the sweep does not wait for) and reach
    the result's problem for the shape, for the static model."""
    (tmp_path / "counted_mm.py").write_text(COUNTED)
    env = {"WORKBENCH_DEVICE": "cpu", "WORKBENCH_REPORTS": str(tmp_path / "r")}
    out = cli("sweep", "counted_mm", "--path", str(tmp_path / "counted_mm.py"), "--json", env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    (problem,) = json.loads(out.stdout)["result"]["problems"].values()
    assert problem["flops"] == 2 * 64 * 32 * 16 and problem["elsize"] == 4


POOL_COUNT = """
import sys
from workbench.catalog.loader import import_module, module_specs
from workbench.sweep.pool import CompilePool
spec = module_specs(import_module(sys.argv[1]))[0]
pool = CompilePool(1, spec)
print(pool.count_flops((64, 32, 16), "bfloat16").result(), "mpmath" in sys.modules)
"""


def test_the_flops_are_counted_in_a_compile_worker_not_in_the_sweeps_process():
    """The meta device's first use imports ~500 modules (sympy, mpmath: 6.5 s on the GPU host,
    where nothing is byte-compiled ahead); the count runs in a forked compile worker with the
    spec it inherited, and the sweep's own process imports none of it."""
    import subprocess
    import sys

    matmul16 = str(ROOT / "benchmarks" / "sweep_matmul16.py")
    out = subprocess.run(
        [sys.executable, "-c", POOL_COUNT, matmul16], capture_output=True, text=True, timeout=300
    )
    assert out.stdout.split() == [str(2.0 * 64 * 32 * 16), "False"], out.stderr[-2000:]


POOL_PRIMED = """
from workbench.runtime import compat
from workbench.sweep.pool import CompilePool

def cached():
    try:
        from triton.runtime.cache import triton_key
    except ImportError:
        from triton.compiler.compiler import triton_key
    return triton_key.cache_info().currsize

print(CompilePool(1).executor.submit(cached).result())
"""


def test_compile_workers_start_with_the_compilers_caches_filled():
    """Each compile worker's first compile paid 0.4 s more than its next (Triton hashing its
    own sources and library): each worker fills that cache as it starts, while the sweep's
    process plans, so no compile waits for it."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", POOL_PRIMED], capture_output=True, text=True, timeout=300
    )
    assert out.stdout.split() == ["1"], out.stderr[-2000:]


POOL_AFTER_DRIVER = """
import threading, time
from workbench.runtime import driver_start
from workbench.sweep.pool import CompilePool

ended = threading.Event()
driver_start.begin(lambda: (time.sleep(1.0), ended.set()))
driver_start.begin(lambda: None)  # once per process: this one is not started
pool = CompilePool(2)
print(ended.is_set(), pool.executor.submit(int).result())
"""


def test_the_compile_pool_forks_only_once_the_drivers_start_has_ended():
    """A GPU job starts the CUDA driver in a thread while it imports; the pool's fork waits for
    that thread (a fork inside the driver's start would leave its locks held in the children)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", POOL_AFTER_DRIVER], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "0"], out.stdout
