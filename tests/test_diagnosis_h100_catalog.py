"""The whole catalog diagnosed from the facts gathered on an H100 (benchmarks/gallery_gpus.sh:
check, compile, neighbours, bench with launch facts, Nsight Compute): every pitfall kernel gets
its pitfall first, and the fixed twins and the library raise nothing above info, except where a
finding is true of the kernel (each named below with the measurement that makes it so)."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import FIXTURES, PITFALL_FINDINGS

from workbench.diagnosis import diagnose
from workbench.diagnosis.facts import Facts

FACTS = json.loads(gzip.open(FIXTURES / "diagnose_h100" / "facts_h100.json.gz", "rt").read())
PITFALLS = {
    **PITFALL_FINDINGS,
    "transformer": "launch-bound",  # 36 launches, the GPU idle 92 % of a call
}
TRUE_OF_THE_KERNEL = {
    "pitfall_small_grid": {"stall-dominant"},  # 16 programs: too few warps to hide latency
}


def test_conflicts_are_weighed_against_the_shared_traffic_the_lsu_counters_miss() -> None:
    """The 64 x 64 bf16 matmul's LSU stores replay 19 % (11 % of LSU wavefronts), but its lines
    move 68 M shared wavefronts through cp.async and wgmma: 0.15 %, no finding; the pooling
    kernel's conflicts stay 91 % either way."""
    ids = {f.id for f in _diagnosis("pitfall_bf16_acc_fixed").findings}
    assert "smem-bank-conflicts" not in ids
    flawed = _diagnosis("pitfall_bank_conflicts").findings[0]
    assert flawed.id == "smem-bank-conflicts" and flawed.evidence["ratio"] > 0.9


def _diagnosis(name: str):
    return diagnose(Facts.from_dict(FACTS[name]["facts"]))


@pytest.mark.parametrize("name", sorted(PITFALLS))
def test_each_pitfall_kernel_gets_its_pitfall_first(name: str) -> None:
    d = _diagnosis(name)
    assert d.findings[0].id == PITFALLS[name] and d.findings[0].severity == "high"
    above = {f.id for f in d.findings[1:] if f.severity != "info"}
    assert above <= TRUE_OF_THE_KERNEL.get(name, set())


@pytest.mark.parametrize("name", sorted(set(FACTS) - set(PITFALLS)))
def test_twins_and_library_raise_nothing_above_info_but_what_is_true(name: str) -> None:
    d = _diagnosis(name)
    above = {f.id for f in d.findings if f.severity != "info"}
    assert above == TRUE_OF_THE_KERNEL.get(name, set())


def test_a_dropout_with_its_own_stream_is_told_apart_from_a_wrong_one() -> None:
    d = _diagnosis("pitfall_dropout_rng")
    rng = next(f for f in d.findings if f.id == "rng-stream")
    assert rng.severity == "info" and "different RNG stream" in rng.title


def test_short_kernels_leave_occupancy_and_bandwidth_to_a_larger_input() -> None:
    """The fused twin of the launch-bound chain runs 2.7 us on 4 programs: its grid, occupancy
    and distance from the copy bandwidth are the input's size, said as such."""
    d = _diagnosis("pitfall_launch_bound_fixed")
    grid = next(f for f in d.findings if f.id == "grid-too-small")
    assert grid.severity == "info" and "2.7 us" in grid.evidence["demoted"]
    assert grid.evidence["severity_before"] == "high"


def test_an_unmasked_load_the_check_proves_in_bounds_is_info() -> None:
    """softmax_online's partner exchange loads without a mask; the check passed at every shape
    with a partial tile."""
    d = _diagnosis("softmax_online")
    mask = next(f for f in d.findings if f.id == "no-boundary-mask")
    assert mask.severity == "info" and "check passed" in mask.evidence["demoted"]


def test_matmul_store_replays_weigh_little_against_its_shared_loads() -> None:
    """26 % of the matmul's shared stores replay, but stores are 0.3 % of its shared traffic."""
    d = _diagnosis("matmul")
    assert all(f.id != "smem-bank-conflicts" for f in d.findings)


def test_a_full_diagnosis_with_ncu_takes_under_45_s_warm() -> None:
    steps = {s["step"]: s["seconds"] for s in FACTS["pitfall_spill"]["steps"]}
    assert {"check", "compile", "neighbours", "bench", "ncu"} <= set(steps)
    assert FACTS["pitfall_spill"]["seconds"] <= 45


def test_a_launch_bound_workload_is_routed_to_its_graph_not_to_the_library() -> None:
    """Eagerly the toy transformer is 0.17x torch; replayed from one CUDA graph it beats it."""
    routing = _diagnosis("transformer").routing
    assert routing.startswith("keep it, replayed from one CUDA graph") and "0.17x torch" in routing
    assert _diagnosis("vector_add").routing.startswith("do not bother")
