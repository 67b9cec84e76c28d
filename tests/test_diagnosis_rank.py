"""`diagnose` on real H100 facts: the roofline placed first (bench, else ncu), what it contradicts
made info with the reason, findings of one problem joined, ranked by severity then gain, the
routing advice and the table beside Nsight Compute's rules; a Diagnosis round-trips."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import FIXTURES

from workbench.bench.result import BenchRecord, BenchResult, Ceilings
from workbench.cache import static as cache_static
from workbench.diagnosis import Diagnosis, Facts, diagnose
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import pitfall
from workbench.diagnosis.rank import MIN_GAIN, rank
from workbench.diagnosis.roofline import NEAR_PEAK
from workbench.profilers import ncureport

B_ADD, B_SOFTMAX = "bench_h100_vector_add.json", "bench_h100_partial.json"
DIAG = FIXTURES / "diagnosis"


def bench(name: str, file: str) -> BenchResult:
    """A kernel's records of a bench.json, as the bench job's result."""
    d = json.loads((FIXTURES / file).read_text())
    records = [BenchRecord.from_dict(r) for r in d["records"] if r["name"] == name]
    return BenchResult(name, d["device"], Ceilings.from_dict(d["ceilings"]), records)


@pytest.fixture(scope="module")
def ncu() -> dict[str, dict]:
    names = ("vector_add", "softmax", "spill", "spill_memory", "spill_fixed")
    return {n: ncureport.load(str(FIXTURES / f"ncu_{n}.ncu-rep")).to_dict() for n in names}


def _ids(d: Diagnosis, above_info: bool = False) -> list[str]:
    return [f.id for f in d.findings if not above_info or f.severity != "info"]


def test_vector_add_at_copy_bandwidth_gets_nothing_above_info(ncu):
    facts = Facts("vector_add", ncu=ncu["vector_add"], bench=bench("vector_add", B_ADD))
    d = diagnose(facts)
    assert d.roofline["source"] == "bench" and d.roofline["bound"] == "memory"
    assert d.roofline["text"].startswith("memory-bound at 1.01x of copy bandwidth")
    assert d.roofline["text"].endswith("little left; the occupancy rules do not apply")
    assert _ids(d, above_info=True) == []
    # NVIDIA rates more warps at 15 %; at the bus's peak they cannot move bytes faster
    rule = next(f for f in d.findings if f.id == "ncu-rule")
    # (NVIDIA's rules alone are info in any case; one of ours must see the problem too)
    assert rule.evidence["rule"] == "AchievedOccupancy" and rule.severity == "info"
    assert rule.gain == 0.0  # capped by the headroom: nothing left
    assert d.routing.startswith("do not bother: torch already runs at 1.01x of copy bandwidth")
    assert "1.00x torch, 0.99x torch.compile" in d.routing


def test_softmax_near_peak_is_info_and_kept(ncu):
    d = diagnose(Facts("softmax", ncu=ncu["softmax"], bench=bench("softmax", B_SOFTMAX)))
    assert d.roofline["ratio"] == pytest.approx(0.979, abs=1e-3)
    assert _ids(d, above_info=True) == []
    stall = next(f for f in d.findings if f.id == "stall-dominant")
    assert stall.evidence["reason"] == "long_scoreboard" and stall.severity == "info"
    assert d.routing.startswith("keep the Triton kernel: 2.29x torch, 1.71x torch.compile")


def test_without_a_bench_ncu_places_the_kernel(ncu):
    d = diagnose(Facts("vector_add", ncu=ncu["vector_add"]))
    assert d.roofline["source"] == "ncu" and d.roofline["bound"] == "memory"
    assert d.roofline["ratio"] == pytest.approx(0.902 / 0.9, abs=1e-3)  # DRAM % over copy's 90 %
    assert _ids(d, above_info=True) == [] and d.routing is None
    spill = diagnose(Facts("pitfall_spill", ncu=ncu["spill"]))
    assert spill.roofline["bound"] == "latency" and spill.roofline["ratio"] is None


def test_a_static_estimate_never_contradicts_a_measurement(ncu):
    """A static 'low occupancy' (of a kernel without tl.dot: severity low) on a kernel measured at
    DRAM peak is info; on one far from its ceiling it stands, and the far placement is itself a
    finding with the headroom as its gain."""
    static = Finding(
        "low-occupancy",
        "theoretical occupancy 25% (16/64 warps), limited by registers",
        "low",
        {"config": "BLOCK=4096", "percent": 25.0, "limiter": "registers", "uses_dot": False},
    )
    at_peak = Facts("k", compile_findings=[static], bench=bench("vector_add", B_ADD))
    (low,) = diagnose(at_peak).findings
    assert low.severity == "info" and "copy bandwidth" in low.evidence["demoted"]
    slow = bench("vector_add", B_ADD)
    slow.records = [_slower(r, 3.0) for r in slow.records]  # the same bytes, 3x the time
    d = diagnose(replace(at_peak, bench=slow))
    assert d.roofline["ratio"] == pytest.approx(1.0096 / 3, abs=1e-3)
    found = {f.id: f for f in d.findings}
    assert found["low-occupancy"].severity == "low"
    far = found["memory-far-from-peak"]
    assert far.severity == "medium" and far.gain == pytest.approx(1 - 1.0096 / 3, abs=1e-3)
    assert _ids(d)[0] == "memory-far-from-peak"  # medium before low
    assert d.routing.startswith("use the library call: torch.compile runs 3.04x faster")


def test_spill_joins_its_facts_and_folds_its_consequences(ncu):
    """The spill measured by ncu, read from the cubin and among the neighbours is one finding;
    the occupancy its registers limit, and NVIDIA's rules that say so, fold into it."""
    facts = Facts.from_dict(json.loads((DIAG / "facts_cpu_pitfall_spill.json").read_text()))
    facts.ncu = ncu["spill_memory"]
    d = diagnose(facts)
    (spill,) = [f for f in d.findings if f.id == "register-spill"]
    assert spill.evidence["sources"] == ["ncu", "configs", "static"]
    assert spill.evidence["spill_instructions"] == 290_048  # the measured figures lead
    assert spill.fix_id == "config" and spill.evidence["alternatives"]  # what --try applies
    assert "configs that do not spill: num_warps=8" in spill.fix
    assert spill.line == 47 and spill.file.endswith("pitfall_spill.py")
    folded = {x["id"] for x in spill.evidence["folded"]}
    assert "low-occupancy" in folded and "low-occupancy" not in _ids(d)
    assert spill.gain == pytest.approx(0.245, abs=1e-3)  # NVIDIA's local-memory estimate
    # 32 programs on 132 SMs at this shape: the grid is the larger loss, and says so
    assert _ids(d, above_info=True) == ["grid-too-small", "register-spill"]


def test_ranking_is_severity_then_gain_unknown_gains_last():
    def f(id: str, severity: str, gain: float | None) -> Finding:
        return Finding(id, id, severity, {}, gain=gain)

    ranked = rank(
        [
            f("stall-dominant", "low", 0.9),
            f("grid-too-small", "high", None),
            f("register-spill", "high", 0.3),
            f("no-boundary-mask", "high", None),
            f("uncoalesced-access", "high", 0.6),
            f("rng-stream", "info", None),
        ]
    )
    assert [x.id for x in ranked] == [
        "no-boundary-mask",  # a wrong result first: its speed is moot
        "uncoalesced-access",
        "register-spill",
        "grid-too-small",  # no gain known: last of its severity
        "stall-dominant",
        "rng-stream",
    ]
    assert 0 < MIN_GAIN < 1 - NEAR_PEAK


def test_agreement_with_nvidia_rules(ncu):
    d = diagnose(Facts("pitfall_spill", ncu=ncu["spill_memory"]))
    rows = {r["ncu"].split(" (")[0] + ":" + str(r["ours"]): r for r in d.agreement}
    assert rows["LaunchConfiguration:grid-too-small"]["verdict"] == "agree"
    assert rows["MemoryCacheAccessPattern:register-spill"]["verdict"] == "agree"
    assert rows["TheoreticalOccupancy:register-spill"]["verdict"] == "agree"  # folded into it
    cpi = rows["CPIStall:stall-dominant"]
    assert cpi["verdict"] == "differ" and "34% of samples; ours asks for 50%" in cpi["why"]
    shared = rows["UncoalescedSharedAccess:smem-bank-conflicts"]
    assert shared["verdict"] == "differ" and "0.0% of all shared wavefronts" in shared["why"]
    add = diagnose(Facts("vector_add", ncu=ncu["vector_add"], bench=bench("vector_add", B_ADD)))
    (row,) = [r for r in add.agreement if r["ncu"] == "AchievedOccupancy"]
    assert row["verdict"] == "differ" and "85% of the theoretical 100%" in row["why"]
    assert "at 1.01x of copy bandwidth" in row["why"]


def test_a_diagnosis_and_its_facts_round_trip(ncu):
    facts = Facts.from_dict(json.loads((DIAG / "facts_cpu_pitfall_spill.json").read_text()))
    facts.ncu, facts.bench = ncu["spill"], bench("vector_add", B_ADD)
    d = diagnose(facts)
    again = Diagnosis.from_dict(json.loads(json.dumps(d.to_dict())))
    assert again.to_dict() == d.to_dict()
    assert [f.evidence for f in again.findings] == [f.evidence for f in d.findings]
    replayed = diagnose(Facts.from_dict(json.loads(json.dumps(facts.to_dict()))))
    assert replayed.to_dict() == d.to_dict()


def _slower(r: BenchRecord, factor: float) -> BenchRecord:
    return replace(
        r,
        ms=r.ms * factor,
        gbps=r.gbps / factor,
        roofline_ratio=r.roofline_ratio / factor,
        speedup_vs_torch=r.speedup_vs_torch / factor,
        speedup_vs_compile=r.speedup_vs_compile / factor,
    )


AUTOTUNED = """
import triton
import triton.language as tl


@triton.autotune(configs=[], key=["M", "n"])
@triton.jit
def kern(x_ptr, M, N, BLOCK: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr))
"""


def test_cache_findings_pass_through_in_the_diagnosis_words():
    """The cache doctor's findings (its own ids, the one severity scale) are the table's
    autotune row, ranked with the rest; one stored in its older words (severity "error", text
    evidence) reads back the same."""
    found = cache_static.findings(AUTOTUNED, "k.py", "3.6.0")
    assert {f.severity for f in found} == {"high", "info"}
    old = {**found[0].to_dict(), "severity": "error", "evidence": found[0].evidence["detail"]}
    assert (
        Finding.from_dict(old) == found[0] and Finding.from_dict(old).evidence == found[0].evidence
    )
    d = diagnose(Facts("k", cache=found))
    unknown, non_key = d.findings
    assert (unknown.id, unknown.severity) == ("autotune-unknown-name", "high")
    assert "drops them silently" in unknown.evidence["detail"]
    assert (non_key.id, non_key.severity) == ("autotune-non-key-args", "info")
    assert pitfall(unknown.id).id == "autotune-stale"
