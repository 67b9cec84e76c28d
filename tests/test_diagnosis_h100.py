"""`diagnose` on facts gathered on the H100 by the diagnose loop (check, compile, neighbours,
bench with eager vs one-CUDA-graph launch facts, Nsight Compute; tests/fixtures/diagnosis/
facts_h100_*.json, Triton 3.6): each pitfall first on its kernel, nothing above info on the
fixed twin and the library kernels, and what a measurement contradicts made info."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, PITFALL_FINDINGS

from workbench.diagnosis import Diagnosis, Facts, diagnose


def h100(name: str) -> Diagnosis:
    path = FIXTURES / "diagnosis" / f"facts_h100_{name}.json"
    return diagnose(Facts.from_dict(json.loads(path.read_text())))


def _loud(d: Diagnosis) -> list[tuple[str, str]]:
    return [(f.id, f.title) for f in d.findings if f.severity != "info"]


@pytest.mark.parametrize("name", ["pitfall_spill", "pitfall_launch_bound", "pitfall_small_grid"])
def test_the_pitfall_is_ranked_first(name: str):
    d = h100(name)
    assert d.findings[0].id == PITFALL_FINDINGS[name] and d.findings[0].severity == "high", _loud(d)


@pytest.mark.parametrize("name", ["pitfall_spill_fixed", "vector_add", "softmax"])
def test_the_twin_and_the_library_kernels_raise_nothing_above_info(name: str):
    assert _loud(h100(name)) == []


def test_the_spill_at_its_bench_shape_joins_three_facts_and_offers_configs():
    spill = h100("pitfall_spill").findings[0]
    assert spill.evidence["sources"] == ["ncu", "configs", "static"]
    assert spill.evidence["spill_instructions"] > 30_000_000  # 8.7 GB through local memory
    assert spill.fix_id == "config"
    changes = [a["change"] for a in spill.evidence["alternatives"]]
    assert changes[0] == "num_warps=8"  # the twin's fix: same tile, more warps
    assert all(a["spill_bytes"] == 0 for a in spill.evidence["alternatives"])


def test_launch_bound_leads_and_the_kernels_own_findings_wait_for_it():
    d = h100("pitfall_launch_bound")
    launch = d.findings[0]
    assert launch.fix_id == "cuda-graph" and launch.gain == pytest.approx(
        1 - 0.0579 / 0.989, abs=0.01
    )
    assert launch.title.startswith("36 launches, GPU idle 96%")
    rest = d.findings[1:]
    assert rest and all(f.severity == "info" for f in rest)
    assert all("the GPU is busy 4% of a call" in f.evidence["demoted"] for f in rest)


def test_a_grid_of_16_programs_explains_the_far_placement():
    d = h100("pitfall_small_grid")
    grid = d.findings[0]
    assert "16 programs" in grid.title and "116 of 132 SMs" in grid.title
    assert "memory-far-from-peak" in [f["id"] for f in grid.evidence["folded"]]
    assert d.roofline["ratio"] == pytest.approx(0.09, abs=0.01)


def test_bank_conflicts_that_cost_nothing_measured_are_info():
    """88 % of the shared wavefronts replay, yet the kernel moves its bytes at 0.98x of copy
    bandwidth: the conflicts hide behind DRAM, and the finding says so instead of asking for a
    fix that would gain nothing."""
    d = h100("pitfall_bank_conflicts")
    conflicts = next(f for f in d.findings if f.id == "smem-bank-conflicts")
    assert conflicts.severity == "info" and conflicts.evidence["severity_before"] == "high"
    assert conflicts.evidence["demoted"] == "at 0.98x of copy bandwidth: nothing left to gain"
    rows = [r for r in d.agreement if r["ours"] == "smem-bank-conflicts"]
    assert {r["ncu"].split(" (")[0] for r in rows} == {
        "SharedMemoryConflicts",
        "UncoalescedSharedAccess",
    }
    assert all(r["verdict"] == "differ" and "copy bandwidth" in r["why"] for r in rows)
    # NVIDIA bounds its partial wave at half the time; the SM time it leaves idle is 3 %
    (tail,) = [r for r in d.agreement if r["ncu"] == "LaunchConfiguration (Tail Effect)"]
    assert "SM time left idle 3%; ours asks for 20%" in tail["why"]


def test_the_roofline_of_a_launch_bound_call_says_the_gpu_idles():
    d = h100("pitfall_launch_bound")
    assert d.roofline["idle"] == pytest.approx(0.958, abs=1e-3)
    assert d.roofline["text"].endswith("the GPU idles 96% of a call, between launches")
    # each NVIDIA rule once, with the launches it fired on
    rows = [(r["ours"], r["ncu"]) for r in d.agreement]
    assert len(rows) == len(set(rows)) and all(r["launches"] for r in d.agreement)
    (gap,) = [r for r in d.agreement if r["ncu"] == "AchievedOccupancy"]
    assert (
        gap["why"]
        == "ours is silent: the grid (4 programs) is smaller than the GPU: grid-too-small"
    )
