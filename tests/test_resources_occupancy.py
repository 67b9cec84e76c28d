"""Occupancy arithmetic, cuobjdump parsing, and the figures measured on a GPU (fixtures written by
`python -m workbench resources NAME --json` on an H200 with Triton 3.6)."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import FIXTURES

from workbench.diagnosis.static import occupancy_finding, spill_finding
from workbench.ir.occupancy import block_shared, occupancy, parse_arch
from workbench.ir.resources import agreement, parse_resource_usage, resources

pytestmark = pytest.mark.versions  # CI runs these under every Triton release


def test_register_limited_matmul_tile():
    # 255 registers -> 8192 per warp -> 2 warps per sub-partition -> 8 warps per SM.
    occ = occupancy(90, 255, 4, 74752)
    assert (occ.blocks_per_sm, occ.active_warps, occ.percent) == (2, 8, 12.5)
    assert occ.limiter == "registers"
    assert occ.block_limits == {"registers": 2, "shared memory": 3, "warps": 16, "blocks": 32}


def test_register_granularity_rounds_per_warp():
    # 40 registers: 1280 per warp, 12 warps per sub-partition (not 12.8), 48 of 64 warps.
    assert occupancy(90, 40, 4, 0).percent == 75.0
    # 33 registers round up to 1280 per warp as well (33 * 32 = 1056 -> 1280).
    assert occupancy(90, 33, 4, 0).active_warps == occupancy(90, 40, 4, 0).active_warps
    assert occupancy(90, 32, 4, 0).percent == 100.0


def test_shared_memory_limit_counts_the_reserved_kilobyte():
    assert block_shared(80, 81920, 0) == block_shared(80, 81920, 1024) == 81920 + 1024
    occ = occupancy(80, 32, 4, block_shared(80, 81920, 0))  # 2 x 81 KB <= 164 KB
    assert occ.block_limits["shared memory"] == 2
    assert occupancy(80, 32, 4, block_shared(80, 82 * 1024, 0)).block_limits["shared memory"] == 1
    assert occupancy(86, 32, 4, block_shared(86, 83 * 1024, 0)).limiter == "shared memory"
    assert occupancy(90, 32, 4, block_shared(90, 227 * 1024, 0)).blocks_per_sm == 1
    assert occupancy(90, 32, 4, block_shared(90, 227 * 1024 + 128, 0)).limiter == "launch"


def test_arch_tables_differ_where_the_hardware_does():
    assert occupancy(86, 16, 1, 0).max_warps == 48
    assert occupancy(86, 16, 1, 0).limiter == "blocks"  # 16 blocks of 1 warp
    assert occupancy(89, 16, 1, 0).blocks_per_sm == 24
    assert occupancy(90, 16, 1, 0).blocks_per_sm == 32


def test_a_block_that_cannot_launch():
    occ = occupancy(90, 64, 8, 300 * 1024)
    assert occ.blocks_per_sm == 0 and occ.limiter == "launch" and "shared" in occ.reason
    assert occupancy(90, 255, 32, 0).limiter == "launch"  # registers per block


def test_parse_arch():
    assert parse_arch("sm_90") == parse_arch("sm90a") == parse_arch(90) == 90
    with pytest.raises(ValueError):
        parse_arch("hopper")
    with pytest.raises(ValueError):
        occupancy(75, 32, 4, 0)


def test_cuobjdump_resource_usage():
    usage = parse_resource_usage((FIXTURES / "ir_resource_usage_spill_sm90.txt").read_text())
    (name,) = usage
    res = resources(name, 90, usage[name], 73728, 4, 3)
    assert (res.regs, res.spill_bytes, res.n_spills) == (255, 512, 128)
    assert res.shared_bytes == 73728 + 1024
    assert spill_finding(res, "cfg").severity == "high"
    found = occupancy_finding(res, "cfg", ("/k.py", 18))
    assert found.evidence["limiter"] == "registers" and found.line == 18
    usage = parse_resource_usage((FIXTURES / "ir_resource_usage_softmax_sm90.txt").read_text())
    res = resources("_row_softmax", 90, usage["_row_softmax"], 0, 4, 3)
    assert res.regs == 18 and res.shared_bytes == 1024 and spill_finding(res, "cfg") is None
    assert occupancy_finding(res, "cfg") is None


def _gpu(name: str) -> dict:
    return json.loads((FIXTURES / f"ir_gpu_resources_{name}.json").read_text())["result"]


@pytest.mark.parametrize("name", ["pitfall_spill", "pitfall_spill_fixed", "vector_add"])
def test_static_figures_agree_with_the_driver(name):
    result = _gpu(name)
    assert result["mode"] == "gpu" and result["arch"] == "sm_90"
    for v in result["variants"]:
        d, res = v["device"], v["resources"]
        # the cubin's REG/STACK are what the driver reports after loading it
        assert d["n_regs"] == res["regs"] and d["n_spills"] == res["spill_bytes"] // 4
        # cross-compiling the same launch gives the very same kernel
        assert v["cross_check"]["same_hash"] and v["cross_check"]["same_resources"]


def test_agreement_record():
    usage = parse_resource_usage((FIXTURES / "ir_resource_usage_spill_sm90.txt").read_text())
    res = resources("_matmul_kernel", 90, usage["_matmul_kernel"], 73728, 4, 3)
    spill = _gpu("pitfall_spill")["variants"][0]["device"]
    assert agreement(res, spill["n_regs"], spill["n_spills"])["spills_match"]
    assert agreement(res, 254, 0)["regs_diff"] == -1
    fixed = _gpu("pitfall_spill_fixed")["variants"][0]
    assert fixed["device"]["n_spills"] == 0 < spill["n_spills"]


def test_occupancy_agrees_with_nsight_compute():
    """The profiler's ncu fixture of pitfall_spill (H100, Triton 3.6) against the prediction
    from this machine's cross-compile figures (the same 255 registers, 72 KB dynamic)."""
    rows = list(csv.reader((FIXTURES / "ncu_spill_raw.csv").open()))
    ncu = {name: value.replace(",", "") for name, value in zip(rows[0], rows[2])}
    usage = parse_resource_usage((FIXTURES / "ir_resource_usage_spill_sm90.txt").read_text())
    res = resources("_matmul_kernel", 90, usage["_matmul_kernel"], 73728, 4, 3)
    assert int(ncu["launch__shared_mem_per_block_dynamic"]) == res.dynamic_shared
    assert int(ncu["launch__registers_per_thread"]) == res.regs
    assert int(ncu["launch__shared_mem_per_block"]) == res.shared_bytes
    limits = {
        "registers": "launch__occupancy_limit_registers",
        "shared memory": "launch__occupancy_limit_shared_mem",
        "warps": "launch__occupancy_limit_warps",
        "blocks": "launch__occupancy_limit_blocks",
    }
    assert res.occupancy.block_limits == {k: int(ncu[m]) for k, m in limits.items()}
    assert res.occupancy.percent == float(ncu["sm__maximum_warps_per_active_cycle_pct"])
