"""Measured findings from real H100 ncu reports (tests/fixtures, written by `workbench profile`)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import cli

from workbench.diagnosis import diagnose_profile
from workbench.diagnosis import measured as profile_findings
from workbench.profilers import ncureport, saved
from workbench.profilers.ncumetrics import NcuLaunch
from workbench.views import rows as views

FIXTURES = Path(__file__).parent / "fixtures"


def _summary(name: str) -> dict:
    return diagnose_profile(ncureport.load(str(FIXTURES / f"ncu_{name}.ncu-rep")).to_dict())


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    return {n: _summary(n) for n in ("spill", "spill_fixed", "softmax", "vector_add")}


def _by_id(summary: dict) -> dict[str, dict]:
    return {f["id"]: f for f in summary["findings"]}


def test_spill_report_yields_register_spill_with_its_figures_and_line(reports):
    spill = _by_id(reports["spill"])["register-spill"]
    ev = spill["evidence"]
    assert ev["registers_per_thread"] == 255
    assert ev["spill_instructions"] == 290_048
    assert ev["local_ld_instructions"] == 140_928 and ev["local_st_instructions"] == 149_120
    assert ev["local_bytes"] == (1_088_000 + 1_120_620) * 32
    assert spill["severity"] == "high" and "maxnreg" in spill["fix"]
    # anchored to the line with the most local-memory sectors: the dot whose tile spills
    assert spill["file"].endswith("kernels/pitfalls/pitfall_spill.py") and spill["line"] == 47
    assert ev["hot_line"]["code"] == "acc += tl.dot(a, b)"
    assert "290,048 spill instructions" in spill["title"] and "70.7 MB" in spill["title"]
    assert reports["spill"]["findings"][0]["id"] == "register-spill"  # the headline comes first


def test_fixed_twin_and_vector_add_have_no_spill_and_no_bank_conflicts(reports):
    for name in ("spill_fixed", "vector_add"):
        ids = set(_by_id(reports[name]))
        assert not ids & {"register-spill", "smem-bank-conflicts"}, (name, ids)
    assert reports["spill_fixed"]["kernels"][0]["registers_per_thread"] == 180


def test_softmax_bank_conflicts_are_below_the_threshold(reports):
    k = reports["softmax"]["kernels"][0]
    assert (k["smem_bank_conflicts_ld"], k["smem_bank_conflicts_st"]) == (19_079, 23_122)
    ratios = profile_findings.bank_conflict_ratios(NcuLaunch.from_dict(k))
    assert ratios["ld"] == pytest.approx(19_079 / 1_133_191)  # 1.7 % of wavefronts
    assert ratios["st"] == pytest.approx(23_122 / 1_137_234)  # 2.0 %
    assert "smem-bank-conflicts" not in _by_id(reports["softmax"])
    # at DRAM peak, its long_scoreboard stalls are the bus at work: info, not a problem
    assert {f["severity"] for f in reports["softmax"]["findings"]} == {"info"}


def test_bank_conflicts_at_the_threshold_are_a_finding(reports):
    """The softmax launch with its store conflicts raised to 20 % of the store wavefronts."""
    k = NcuLaunch.from_dict(reports["softmax"]["kernels"][0])
    raised = replace(k, smem_bank_conflicts_st=0.2 * k.smem_wavefronts_st)
    found = profile_findings.bank_conflict_finding(raised)
    # weighed against all shared wavefronts (loads too): 11 %, said for the stores that replay
    assert found is not None and found.severity == "medium"
    assert "on stores" in found.title and "11%" in found.title
    assert found.evidence["ratio_st"] == pytest.approx(0.2)
    assert found.evidence["ratio"] == pytest.approx(0.11, abs=0.005)
    few = replace(k, smem_bank_conflicts_st=0.05 * k.smem_wavefronts_st)  # a few store replays
    assert profile_findings.bank_conflict_finding(few) is None
    # the reductions' shared traffic sits in Triton's inlined tl.max/tl.sum, not a kernel line
    assert found.line is None
    unweighed = replace(raised, smem_wavefronts_st=None)  # no denominator: still said, low
    assert profile_findings.bank_conflict_finding(unweighed).severity == "low"


def test_occupancy_findings(reports):
    spill = _by_id(reports["spill"])
    low, grid = spill["low-occupancy"], spill["grid-too-small"]
    assert "6.2%" in low["title"] and "registers" in low["title"]
    assert low["evidence"]["occupancy_limits"]["registers"] == 2
    # the gap between 6.2 % achieved and 12.5 % theoretical is the grid: 32 programs, 132 SMs
    assert "occupancy-gap" not in spill
    assert "32 programs" in grid["title"] and "100 of 132 SMs" in grid["title"]
    assert grid["evidence"]["idle"] == pytest.approx(1 - 32 / 132, abs=1e-3)
    assert "split-K" in grid["fix"]
    # 85 % of a 100 % theoretical at 90 % of DRAM bandwidth: no finding of ours
    assert not {"low-occupancy", "occupancy-gap"} & set(_by_id(reports["vector_add"]))
    assert not {"low-occupancy", "occupancy-gap"} & set(_by_id(reports["softmax"]))


def test_the_rule_with_the_largest_estimated_speedup_is_named(reports):
    rule = _by_id(reports["spill"])["ncu-rule"]
    assert rule["evidence"]["rule"] == "TheoreticalOccupancy"
    assert rule["evidence"]["speedup_pct"] == pytest.approx(87.5)
    assert rule["evidence"]["agrees_with"] == "low-occupancy"
    assert "registers" in rule["fix"]
    add = _by_id(reports["vector_add"])["ncu-rule"]
    # rated 15 % by NVIDIA, but the launch moves DRAM at its peak: more warps cannot help
    assert add["evidence"]["rule"] == "AchievedOccupancy" and add["severity"] == "info"
    assert (
        "@url" not in add["evidence"]["message"]
        and "CUDA Best Practices Guide" in (add["evidence"]["message"])
    )
    memory = _summary("spill_memory")  # more sections: a different rule leads
    top = _by_id(memory)["ncu-rule"]["evidence"]
    assert top["rule"] == "LaunchConfiguration" and top["speedup_type"] == "global"


def test_summaries_saved_before_findings_get_them_computed(reports):
    old = {k: v for k, v in reports["spill"].items() if k != "findings"}
    assert diagnose_profile(old)["findings"] == reports["spill"]["findings"]
    kept = {**reports["spill"], "findings": []}  # a summary's own findings are final
    assert diagnose_profile(kept) is kept


def test_views_rows(reports):
    [row] = views.profile_rows(reports["softmax"])
    assert dict(zip(views.PROFILE_HEADERS, row))["bank cfl ld/st"] == "19,079/23,122 (1.7%/2.0%)"
    rules = views.rule_rows(reports["spill"])
    assert [r[1] for r in rules[:2]] == ["TheoreticalOccupancy", "LaunchConfiguration"]
    lines = views.hot_line_rows(reports["spill"])
    assert lines[0][1] == "pitfall_spill.py:47" and lines[0][3] == "long_scoreboard 273"
    assert views.measured_finding_lines(reports["softmax"]).startswith("[info] stall-dominant")


def test_import_json_carries_findings_and_is_stored(_reports):
    out = cli("profile", "--import", str(FIXTURES / "ncu_spill.ncu-rep"), "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["findings"][0]["id"] == "register-spill"
    assert d["recorded"][0]["kernel"] == "pitfall_spill"
    stored = saved.latest("pitfall_spill")
    assert stored is not None and stored.run_id == d["recorded"][0]["run_id"]
    assert stored.summary["findings"] == d["findings"]
    assert saved.latest("pitfall_spill_fixed") is None
    text = cli("profile", "--import", str(FIXTURES / "ncu_spill_fixed.ncu-rep"))
    assert "measured findings:" in text.stdout and "register-spill" not in text.stdout
    assert "recorded as run" in text.stderr
    assert saved.latest("pitfall_spill_fixed").summary["kernels"][0]["launch"] == 0


def test_a_report_without_workbench_ranges_needs_a_name(reports):

    result = copy.deepcopy(reports["vector_add"])
    result["kernels"][0]["range"] = ""
    saved.record_import(result, "x.ncu-rep", None)
    assert result["recorded"] == [] and "profile NAME --import FILE" in result["notes"][0]
    saved.record_import(result, "x.ncu-rep", "my_add")
    assert result["recorded"][0]["kernel"] == "my_add"
    assert saved.latest("my_add").summary["kernels"][0]["kernel"] == "_add_kernel"


@pytest.mark.parametrize("as_written", ["measured only", "with its findings"])
def test_a_stored_profile_shows_its_findings_however_it_was_written(reports, tmp_path, as_written):
    """A profile run leaves what ncu measured (profile.json); the Profile tab has the diagnosis
    find what it shows. One written with its findings (older runs, imports) shows them as kept."""
    from workbench.catalog.discovery import discover
    from workbench.run.store import RunRecord, Store
    from workbench.views import stored

    summary = copy.deepcopy(reports["spill"])
    if as_written == "measured only":
        del summary["findings"]
    folder = tmp_path / "profile-run"
    folder.mkdir()
    (folder / "profile.json").write_text(json.dumps(summary))
    Store().record(
        RunRecord("p-1", "profile-target", "pitfall_spill", None, {}, "ok", 1.0, 2.0, "h100",
                  "gpu", None, None, None, str(folder))
    )  # fmt: skip
    entry = discover([str(Path(__file__).parents[1] / "kernels")]).find("pitfall_spill")
    shown = stored.latest("profile", entry)
    assert shown is not None and shown.result["findings"] == reports["spill"]["findings"]
    assert shown.result["findings"][0]["id"] == "register-spill"
