"""`diagnose` as a user runs it on a CPU host: the spilling matmul checked in the interpreter,
compiled with its neighbours for sm_90, a real H100 Nsight Compute report imported beside, and
the spill ranked first with the configs that do not spill; `--try` refused before any work."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, cli, cpu_cli

from workbench.diagnosis.finding import Finding
from workbench.loop.trial import alternatives as alternatives_of
from workbench.run.store import Store


@pytest.fixture(scope="module")
def spill(tmp_path_factory) -> dict:
    args = ("diagnose", "pitfall_spill", "--import", str(FIXTURES / "ncu_spill.ncu-rep"), "--json")
    proc, reports = cpu_cli(tmp_path_factory, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"out": json.loads(proc.stdout), "reports": reports}


def test_every_fact_this_host_can_give_is_gathered(spill):
    out = spill["out"]
    steps = {s["step"] for s in out["steps"]}
    assert {"check", "compile", "neighbours", "cache", "import"} <= steps
    assert set(out["diagnosis"]["missing"]) == {"bench", "ncu"}  # no GPU here
    assert all("no GPU" in why for why in out["diagnosis"]["missing"].values())


def test_the_spill_comes_with_the_configs_that_do_not_spill(spill):
    findings = {f["id"]: f for f in spill["out"]["diagnosis"]["findings"]}
    spill_finding = findings["register-spill"]
    assert spill_finding["severity"] == "high" and spill_finding["fix_id"] == "config"
    # the measured spill leads; the static one, joined into it, brought the neighbours
    assert "ncu" in spill_finding["evidence"]["sources"]
    alternatives = alternatives_of(Finding.from_dict(spill_finding))
    assert alternatives and all(a["spill_bytes"] == 0 for a in alternatives)
    assert any(a["values"]["num_warps"] == 8 for a in alternatives)  # the fixed twin's config


def test_the_imported_report_is_read_as_measured_facts_and_ranked_by_gain(spill):
    diagnosis = spill["out"]["diagnosis"]
    # that H100 report profiled a 1024x1024x512 product: 32 programs on 132 SMs, the largest
    # loss, ranked first, with the share of SMs left idle as its gain
    top = diagnosis["findings"][0]
    assert top["id"] == "grid-too-small" and top["evidence"]["programs"] == 32
    assert top["gain"] == pytest.approx(100 / 132, abs=0.01)
    assert sum(f["id"] == "register-spill" for f in diagnosis["findings"]) == 1
    assert diagnosis["roofline"] is not None  # placed from ncu's throughput


def test_the_diagnosis_is_recorded_in_the_store(spill):
    records = Store(spill["reports"]).history("pitfall_spill", ("diagnose",), 5)
    assert len(records) == 1 and records[0].result["findings"][0]["id"] == "grid-too-small"


def test_try_without_a_gpu_is_refused_before_any_work():
    proc = cli("diagnose", "pitfall_spill", "--try", "register-spill", timeout=60)
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stderr and "GPU host" in proc.stderr


def test_a_missing_report_to_import_is_refused_before_any_work():
    proc = cli("diagnose", "pitfall_spill", "--import", "no-such.ncu-rep", timeout=60)
    assert proc.returncode == 2
    assert "no-such.ncu-rep: no such file" in proc.stderr and "(usage)" in proc.stderr
