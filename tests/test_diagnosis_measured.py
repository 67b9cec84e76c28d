"""The measured rows added to the table, on real H100 reports (ncu, nsys) and the bench's
launch facts: grid too small / tail wave, one stall reason dominating, uncoalesced access,
launch-bound; each fires on its flawed facts and stays silent on the others."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from conftest import FIXTURES

from workbench.diagnosis import Facts, diagnose
from workbench.diagnosis.facts import LaunchFacts
from workbench.diagnosis.launch import launch_bound
from workbench.diagnosis.measured import (
    grid_fill,
    grid_finding,
    spill_finding,
    stall_finding,
    stall_shares,
    uncoalesced_finding,
)
from workbench.loop.gather import _nsys_launch_facts
from workbench.profilers import ncureport
from workbench.profilers.ncumetrics import NcuLaunch
from workbench.profilers.nsysreport import load


@pytest.fixture(scope="module")
def launch() -> dict[str, NcuLaunch]:
    """The hottest launch of each H100 report."""
    names = ("vector_add", "softmax", "spill", "spill_fixed")
    return {n: ncureport.load(str(FIXTURES / f"ncu_{n}.ncu-rep")).kernels()[0] for n in names}


def test_grid_fill_counts_the_sms_from_the_launch(launch):
    spill = grid_fill(launch["spill"])  # 32 programs, 2 fit per SM by registers, 0.12 waves
    assert (spill["sms"], spill["programs"], spill["programs_per_sm"]) == (132, 32, 2)
    assert spill["idle"] == pytest.approx(1 - 32 / 132)
    add = grid_fill(launch["vector_add"])  # 65536 programs, 8 per SM: 62 waves
    assert add["sms"] == 132 and add["idle"] == pytest.approx((63 - 62.06) / 63, abs=1e-3)


def test_a_grid_smaller_than_the_gpu_and_a_tail_wave(launch):
    small = grid_finding(launch["spill"])
    assert small.severity == "high" and "leaves 100 of 132 SMs idle" in small.title
    assert small.gain == pytest.approx(0.758, abs=1e-3)  # NVIDIA's LaunchConfiguration estimate
    assert grid_finding(launch["vector_add"]) is None and grid_finding(launch["softmax"]) is None
    # 1.25 waves: the last one a quarter full
    tail = replace(launch["softmax"], grid_size=660.0, waves_per_sm=1.25)
    found = grid_finding(tail)
    assert "tail wave" in found.title and "persistent grid" in found.fix
    assert found.evidence["idle"] == pytest.approx(0.375)  # (2 - 1.25) / 2 of the SM time


def test_one_stall_reason_dominating(launch):
    shares = stall_shares(launch["vector_add"])
    assert max(shares, key=shares.get) == "long_scoreboard" and shares["long_scoreboard"] > 0.7
    found = stall_finding(launch["vector_add"])
    # where warps wait, with warps enough to hide it: the why behind another finding
    assert found.severity == "info" and found.line == 18  # the line the samples land on
    assert "global or local memory" in found.fix
    # the spill kernel's stalls spread over long_scoreboard, lg_throttle, wait, barrier
    assert stall_finding(launch["spill"]) is None
    ncu = {"tool": "ncu", "kernels": [launch["vector_add"].to_dict()]}
    d = diagnose(Facts("vector_add", ncu=ncu))
    assert all(f.severity == "info" for f in d.findings)


def test_uncoalesced_access_names_its_line(launch):
    for name in launch:
        assert uncoalesced_finding(launch[name]) is None, name  # every real launch coalesces
    strided = copy.deepcopy(launch["vector_add"])
    for h in strided.hot_lines:
        if h["line"] == 16:  # the x load reading every 4th 32-byte sector
            h["memory_l2_theoretical_sectors_global"] *= 4
    found = uncoalesced_finding(strided)
    assert found.line == 16 and found.evidence["excess"] == pytest.approx(1.0)  # 3 of 3 ideal
    assert found.severity == "high" and "(line 16)" in found.fix
    assert found.gain == pytest.approx(0.5)


def _transformer() -> LaunchFacts:
    """The toy transformer's fp16 forward from its Nsight Systems export (108 launches, GPU
    idle 95 %), with the eager and one-graph times measured on the H100 (issue 13)."""
    nsys = _nsys_launch_facts(load(str(FIXTURES / "nsys_transformer.sqlite")).to_dict(), None)
    nsys.eager_ms, nsys.graph_ms, nsys.graph_correct = 3.55, 0.145, True
    return nsys


def test_launch_bound_from_nsys_and_the_graph_replay():
    (found,) = launch_bound(Facts("transformer", launch=_transformer()))
    assert found.title.startswith("108 launches, GPU idle 95%, 118 us mean gap")
    assert "3.55 -> 0.145 ms (24.5x)" in found.title
    assert found.severity == "high" and found.fix_id == "cuda-graph"
    assert found.gain == pytest.approx(1 - 0.145 / 3.55)
    assert "CUDA graph" in found.fix
    nsys_only = _transformer()
    nsys_only.eager_ms = nsys_only.graph_ms = None
    (idle,) = launch_bound(Facts("transformer", launch=nsys_only))
    assert idle.gain == pytest.approx(nsys_only.idle_fraction) and idle.evidence["source"] == "nsys"
    wrong = _transformer()
    wrong.graph_correct = False
    (unsafe,) = launch_bound(Facts("transformer", launch=wrong))
    assert unsafe.fix_id is None and "replay's outputs were wrong" in unsafe.fix


def test_one_long_kernel_is_not_launch_bound():
    """vector_add at 2^28 fp32: one launch, busy for the whole call (ncu's 1.0596 ms of the
    bench's 1.0632 ms); replayed from a graph it is no faster."""
    one = LaunchFacts(launches=1, wall_ns=1.0632e6, gpu_busy_ns=1.0596e6, eager_ms=1.0632)
    assert launch_bound(Facts("vector_add", launch=one)) == []
    one.graph_ms, one.graph_correct = 1.0601, True
    assert launch_bound(Facts("vector_add", launch=one)) == []


@pytest.mark.parametrize("excess, fires", [(0.24, False), (0.26, True)])
def test_uncoalesced_access_threshold_edges(launch, excess, fires):
    """A quarter more sectors than the access needs is the line: just under it stays silent,
    just over it is a medium finding (high only from twice the sectors)."""
    k = copy.deepcopy(launch["vector_add"])
    ideal_key = "memory_l2_theoretical_sectors_global_ideal"
    lines = [h for h in k.hot_lines if h.get("origin", "kernel") == "kernel"]
    for h in lines:  # every line as coalesced as it can be
        h["memory_l2_theoretical_sectors_global"] = h.get(ideal_key) or 0
    ideal = sum(h.get(ideal_key) or 0 for h in lines)
    hot = next(h for h in lines if h["line"] == 16)
    hot["memory_l2_theoretical_sectors_global"] += excess * ideal
    found = uncoalesced_finding(k)
    assert (found is not None) == fires
    if fires:
        assert found.severity == "medium" and found.line == 16


def test_a_spill_seen_only_through_local_traffic_is_found(launch):
    """ncu without the SASS spill counter (a preset that leaves it out) still shows the spill
    by its local loads and stores, or by local bytes alone; a clean launch stays silent."""
    spill = launch["spill"]
    assert spill_finding(spill) is not None
    by_traffic = replace(spill, spill_instructions=0)
    found = spill_finding(by_traffic)
    assert found is not None and "local ld/st" in found.title
    by_bytes = replace(by_traffic, local_ld_instructions=0, local_st_instructions=0)
    assert spill_finding(by_bytes) is not None
    clean = replace(by_bytes, local_bytes=0)
    assert spill_finding(clean) is None


def test_ncu_placement_edges():
    """Placed by ncu's throughputs: the busier of DRAM and SM decides at a hair either way; all
    under the latency bound is neither."""
    from workbench.diagnosis.roofline import LATENCY_BOUND, from_ncu

    base = NcuLaunch(launch=0, range=None, kernel="k", config=None)
    assert from_ncu(replace(base, dram_throughput_pct=61.0, sm_throughput_pct=60.0)).bound == (
        "memory"
    )
    assert from_ncu(replace(base, dram_throughput_pct=59.0, sm_throughput_pct=60.0)).bound == (
        "compute"
    )
    low = LATENCY_BOUND - 1
    assert from_ncu(replace(base, dram_throughput_pct=low, sm_throughput_pct=low)).bound == (
        "latency"
    )
    assert from_ncu(replace(base, sm_throughput_pct=50.0)) is None


def test_contiguous_but_scalar_accesses_at_an_unaligned_length_say_so():
    """The H100's ncu launch of pitfall_off_by_one_fixed at 2^28 - 1 floats: 4x the sectors with
    contiguous indices. The length leaves no access provably 16-byte aligned, so each lane loads
    its four floats one at a time (four LDG.E in the SASS; one LDG.E.128 at 2^28): the fix names
    the length, not the strides."""
    saved = json.loads((FIXTURES / "ncu_off_by_one_fixed_h100.json").read_text())["kernel"]
    found = uncoalesced_finding(NcuLaunch.from_dict(saved))
    assert found is not None and found.evidence["excess"] == pytest.approx(3.0, abs=0.01)
    assert (found.evidence["length"], found.evidence["vector"]) == (268435455, 4)
    assert "not a multiple of 4 elements" in found.fix and "LDG.E.128" in found.fix
    aligned = NcuLaunch.from_dict({**saved, "config": "268435456:float32"})
    plain = uncoalesced_finding(aligned)
    assert plain is not None and "length" not in plain.evidence
    assert plain.fix.startswith("make the fastest-moving index the contiguous one")
