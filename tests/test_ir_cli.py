"""`ir` and `resources` end to end on CPU: real cross-compiles in a child process, as a user runs
them. Each command runs once per session; the tests read its output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, cli, cpu_env

from workbench.ir.result import IrResult

KERNELS = str(FIXTURES / "ir_kernels")
MAX_LINE = 16  # `top = tl.max(x, axis=0)` in ir_small.py


class Runs:
    """Runs each distinct command once and keeps its result."""

    def __init__(self, root: Path):
        self.root = root
        self.env = cpu_env(root / "reports")
        self.done: dict[tuple, object] = {}

    def __call__(self, *args: str):
        if args not in self.done:
            self.done[args] = cli(*args, env=self.env, timeout=300)
        return self.done[args]

    def json(self, *args: str) -> dict:
        proc = self(*args, "--json")
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("ir"))


@pytest.mark.versions
def test_ir_writes_every_stage_and_maps_lines(runs):
    out = runs.root / "softmax"
    outcome = runs.json("ir", "row_softmax", "--path", KERNELS, "--out", str(out))
    result = outcome["result"]
    assert outcome["status"] == "ok" and result["mode"] == "cross-compile"
    assert result["arch"] == "sm_90" and result["line_info"]
    (variant,) = result["variants"]
    assert variant["label"] == "BLOCK=64,num_warps=1,num_stages=3" and not variant["error"]
    assert set(variant["artifacts"]) == {"ttir", "ttgir", "llir", "ptx", "sass", "cubin"}
    for stage, path in variant["artifacts"].items():
        assert Path(path).is_file() and Path(path).parent.parent == out, stage
    assert ".target sm_90a" in Path(variant["artifacts"]["ptx"]).read_text()
    for stage, by_file in variant["sourcemap"].items():
        assert str(MAX_LINE) in by_file[variant["file"]], stage
    assert variant["resources"]["regs"] > 0 and variant["resources"]["spill_bytes"] == 0
    assert result["findings"] == []


def test_line_trail_for_another_arch(runs):
    proc = runs("ir", "row_softmax", "--path", KERNELS, "--line", str(MAX_LINE), "--arch", "sm_80")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sm_80" in proc.stdout and "tl.max(x, axis=0)" in proc.stdout
    assert "tt.reduce" in proc.stdout and "SHFL.BFLY" in proc.stdout
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
        assert f"  {stage}: " in proc.stdout


def test_shape_picks_the_specialisation(runs):
    # A 4 x 100 input makes BLOCK = 128 where the first check shape (4 x 64) makes 64.
    outcome = runs.json("resources", "row_softmax", "--path", KERNELS, "--shape", "4x100")
    (variant,) = outcome["result"]["variants"]
    assert variant["label"].startswith("BLOCK=128,")
    bad = runs("resources", "row_softmax", "--path", KERNELS, "--shape", "4xq")
    assert bad.returncode == 2 and "--shape 4096x4096" in bad.stderr


def test_copies_of_one_kernel_file_each_map_to_themselves(tmp_path):
    # Triton's cache key leaves out the file's path: a copy compiled first must not lend its path.
    env = cpu_env(tmp_path / "reports")
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    for copy in ("first", "second"):
        folder = tmp_path / copy
        folder.mkdir()
        (folder / "ir_small.py").write_text((FIXTURES / "ir_kernels" / "ir_small.py").read_text())
        args = ("ir", "row_softmax", "--path", str(folder), "--stage", "ttir", "--json")
        proc = cli(*args, env=env, timeout=300)
        (variant,) = json.loads(proc.stdout)["result"]["variants"]
        assert set(variant["sourcemap"]["ttir"]) == {str(folder / "ir_small.py")}, copy


@pytest.mark.versions
def test_spill_found_by_cross_compiling_and_gone_with_more_warps(runs):
    diff = runs.json("ir", "pitfall_spill", "--diff", "num_warps=8")
    rows = {r["field"]: r for r in diff["resources"]}
    assert rows["spill_bytes"]["a"] > 0 and rows["spill_bytes"]["b"] == 0
    assert rows["regs"]["delta"] < 0 and rows["num_warps"]["delta"] == 4
    assert diff["a"]["label"].endswith("num_warps=4,num_stages=3")
    stages = {s["stage"]: s for s in diff["stages"]}
    assert stages["ttir"]["added"] == 0  # same program; only layout and code differ
    assert stages["ttgir"]["added"] > 0 and stages["sass"]["removed"] > 0


@pytest.mark.versions
def test_resources_lists_the_static_findings(runs):
    result = runs.json("resources", "flawed", "--path", KERNELS)["result"]
    ids = {f["id"] for f in result["findings"]}
    assert ids == {
        "accumulating-low-precision",
        "fp32-dot-ieee",
        "reduction-across-blocks",
        "no-boundary-mask",
        "forgot-constexpr",
        "host-sync",
    }
    assert all(f["file"].endswith("ir_small.py") and f["line"] for f in result["findings"])
    assert result["irregular_shapes"] == [[15, 15]]


@pytest.mark.versions
def test_every_autotune_config_with_its_pre_hook(runs):
    result = runs.json("resources", "tma_copy", "--path", KERNELS)["result"]
    labels = [v["label"] for v in result["variants"]]
    assert labels == ["BLOCK=64,num_warps=4,num_stages=3", "BLOCK=32,num_warps=2,num_stages=3"]
    big, small = (v["resources"]["shared_bytes"] for v in result["variants"])
    assert big > small  # the pre_hook gave each config its own TMA block shape


def test_config_not_in_the_kernel_is_derived(runs):
    args = ("resources", "row_softmax", "--path", KERNELS, "--config", "num_warps=4")
    result = runs.json(*args, "--arch", "sm_86")["result"]
    (variant,) = result["variants"]
    assert variant["derived"] and variant["values"]["num_warps"] == 4
    assert variant["resources"]["occupancy"]["arch"] == "sm_86"
    assert variant["resources"]["occupancy"]["max_warps"] == 48


def test_bad_config_names_cause_and_remedy(runs):
    proc = runs("ir", "row_softmax", "--path", KERNELS, "--config", "BLOCK")
    assert proc.returncode == 2 and "not KEY=VALUE" in proc.stderr and "remedy" in proc.stderr
    proc = runs("ir", "row_softmax", "--path", KERNELS, "--config", "NOPE=3")
    assert proc.returncode == 2
    assert "NOPE is neither a tl.constexpr parameter" in proc.stdout + proc.stderr


@pytest.mark.skipif(os.environ.get("WORKBENCH_DEVICE") == "cuda", reason="CPU behaviour")
def test_resources_text_output(runs):
    proc = runs("resources", "pitfall_spill")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "register-spill" in proc.stdout and "limited by registers" in proc.stdout


@pytest.mark.versions
def test_jit_helpers_from_a_package_module_compile(runs):
    # Imported under the interpreter first, `from ir_pkg import _helpers` must come back
    # compilable, not as the package attribute left from the interpreted import.
    result = runs.json("resources", "uses_helper", "--path", KERNELS)["result"]
    (variant,) = result["variants"]
    assert variant["error"] is None and variant["resources"]["regs"] > 0


def test_the_ir_result_reads_back_typed_and_whole(runs):
    """A real cross-compile's result is exactly what the typed schema writes, and what it did."""
    out = runs.root / "softmax"
    result = runs.json("ir", "row_softmax", "--path", KERNELS, "--out", str(out))["result"]
    typed = IrResult.from_dict(result)
    assert typed.to_dict() == result  # no key missing or unknown; the summary agrees
    assert typed.mode == "cross-compile" and typed.arch == "sm_90" and typed.variants
    for v in typed.variants:
        assert v.error is None and v.hash and v.device is None and v.cross_check is None
        assert v.resources and v.resources["regs"] > 0 and v.timings["compile_s"] > 0
        assert set(v.line_counts) == set(v.artifacts) - {"cubin"} == set(typed.stages)
    broken = {**result, "variants": [{**result["variants"][0], "device": None, "extra": 1}]}
    with pytest.raises(TypeError):
        IrResult.from_dict(broken)
