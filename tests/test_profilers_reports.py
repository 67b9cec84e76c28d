"""Reading real reports recorded by the workbench on an H100 (ncu 2025.3.1, Triton 3.6).

The fixtures were written by `python -m workbench profile ... --tool ncu|nsys` itself (see
tests/fixtures/ncu_nsys_record.sh); the numbers asserted here are what the H100 measured.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, cli

from workbench.profilers import ncureport, nsysreport, session
from workbench.profilers.ncumetrics import NcuLaunch
from workbench.runtime.errors import WorkbenchError


@pytest.fixture(scope="module")
def spill() -> ncureport.NcuProfile:
    return ncureport.load(str(FIXTURES / "ncu_spill.ncu-rep"))


def test_spill_report_one_launch_of_the_kernel_in_its_range(spill):
    k = spill.kernels()
    assert len(k) == 1  # the NVTX range and kernel filter let exactly one launch through
    row = k[0]
    assert row.kernel == "_matmul_kernel"
    assert row.range == "pitfall_spill:1024x1024x512:float16"
    assert row.config == "1024x1024x512:float16"
    assert row.registers_per_thread == 255
    assert row.spill_instructions == 290_048
    assert row.local_ld_sectors == 1_088_000
    assert row.local_bytes == (1_088_000 + 1_120_620) * 32
    assert row.occupancy_limiter == "registers"
    assert row.theoretical_occupancy_pct == pytest.approx(12.5)
    assert row.achieved_occupancy_pct == pytest.approx(6.2475, abs=1e-3)
    assert row.duration_ns == pytest.approx(46_752)
    assert row.dram_throughput_pct == pytest.approx(1.356, abs=1e-3)


def test_metrics_are_long_and_in_base_units(spill):
    m = spill.metrics
    assert list(m.columns) == ["launch", "range", "kernel", "config", "metric", "value", "unit"]
    dur = m[m["metric"] == "gpu__time_duration.sum"].iloc[0]
    assert dur["unit"] == "ns" and dur["value"] == 46_752
    assert m["metric"].is_unique  # one launch: each metric once


def test_nvidia_rule_results_with_speedups(spill):
    rules = spill.rules.set_index("rule")
    assert rules.loc["TheoreticalOccupancy", "speedup_pct"] == pytest.approx(87.5)
    assert (
        "limited by the number of required registers"
        in rules.loc["TheoreticalOccupancy", "message"]
    )
    assert rules.loc["LaunchConfiguration", "title"] == "Small Grid"
    assert rules.loc["LaunchConfiguration", "speedup_type"] == "global"
    assert set(spill.rules["type"]) == {"OPTIMIZATION"}


def test_source_counters_land_on_the_kernels_python_lines(spill):
    lines = spill.lines()
    kernel_lines = lines[lines["origin"] == "kernel"]
    top = kernel_lines.iloc[0]
    assert top["file"].endswith("kernels/pitfalls/pitfall_spill.py")
    assert top["code"] == "acc += tl.dot(a, b)"  # from the source embedded in the report
    assert top["smsp__pcsamp_sample_count"] == 614
    local = kernel_lines.set_index("line")["memory_l2_theoretical_sectors_local"]
    assert local[47] == 1_048_576 and local[45] == 1_045_504  # spills around the dot
    assert set(lines["origin"]) <= {"kernel", "triton"}


def test_fixed_twin_does_not_spill():
    fixed = ncureport.load(str(FIXTURES / "ncu_spill_fixed.ncu-rep")).kernels()[0]
    assert fixed.registers_per_thread == 180
    assert fixed.spill_instructions == 0 and fixed.local_bytes == 0
    assert fixed.duration_ns == pytest.approx(11_200)


def test_softmax_bank_conflicts_and_vector_add_throughput():
    soft = ncureport.load(str(FIXTURES / "ncu_softmax.ncu-rep")).kernels()[0]
    assert soft.kernel == "_softmax_kernel"
    assert (soft.smem_bank_conflicts_ld, soft.smem_bank_conflicts_st) == (19_079, 23_122)
    add = ncureport.load(str(FIXTURES / "ncu_vector_add.ncu-rep")).kernels()[0]
    assert add.range == "vector_add:268435456:float32"
    assert add.dram_throughput_pct == pytest.approx(90.21, abs=0.01)
    assert add.occupancy_limiter == "registers, warps"  # a tie is reported as a tie


def test_memory_preset_adds_stall_rules_and_section_only_metrics():
    mem = ncureport.load(str(FIXTURES / "ncu_spill_memory.ncu-rep"))
    values = mem.metrics.set_index("metric")["value"]
    assert values["derived__local_spilling_requests"] == 290_048  # only sections give derived__
    assert values["derived__local_spilling_requests_pct"] == 100
    assert not mem.metrics["metric"].str.endswith("_not_issued").any()
    rules = set(mem.rules["rule"])
    assert {"CPIStall", "IssueSlotUtilization", "MemoryCacheAccessPattern"} <= rules
    lines = mem.lines()
    top = lines[lines["origin"] == "kernel"].iloc[0]
    assert top["smsp__pcsamp_warps_issue_stalled_long_scoreboard"] > 0


def test_raw_csv_gives_the_same_numbers_as_the_report(spill):
    csv = ncureport.load(str(FIXTURES / "ncu_spill_raw.csv"))
    assert csv.reader == "csv (raw page)"
    a, b = csv.kernels()[0], spill.kernels()[0]
    for column in ("range", "kernel", "registers_per_thread", "spill_instructions", "local_bytes"):
        assert getattr(a, column) == getattr(b, column), column
    assert a.duration_ns == b.duration_ns


def test_a_launch_is_its_summary_entry_and_reads_back_from_it(spill):
    """`NcuLaunch` is the summary's per-launch JSON: the same keys in the same order, read back
    equal; a report without per-line counters (a raw CSV) has no `hot_lines` key."""
    [k] = spill.kernels()
    entry = spill.to_dict()["kernels"][0]
    assert list(entry) == list(k.to_dict()) and NcuLaunch.from_dict(entry) == k
    assert list(entry)[:5] == ["launch", "range", "kernel", "config", "duration_ns"]
    [raw] = ncureport.load(str(FIXTURES / "ncu_spill_raw.csv")).to_dict()["kernels"]
    assert "hot_lines" not in raw and NcuLaunch.from_dict(raw).hot_lines is None
    assert NcuLaunch.from_dict(raw).to_dict() == raw


def test_details_csv_gives_rules_and_section_values():
    det = ncureport.load(str(FIXTURES / "ncu_spill_details.csv"))
    k = det.kernels()[0]
    assert k.registers_per_thread == 255 and k.occupancy_limiter == "registers"
    rules = det.rules.set_index("rule")
    assert rules.loc["TheoreticalOccupancy", "type"] == "OPTIMIZATION"
    assert rules.loc["TheoreticalOccupancy", "speedup_pct"] == pytest.approx(87.5)


def test_json_summary_carries_what_the_diagnosis_needs(spill):
    d = spill.to_dict()
    json.dumps(d)  # JSON-safe
    k = d["kernels"][0]
    for key in (
        "kernel",
        "range",
        "duration_ns",
        "registers_per_thread",
        "theoretical_occupancy_pct",
        "achieved_occupancy_pct",
        "occupancy_limiter",
        "local_bytes",
        "smem_bank_conflicts_ld",
        "smem_bank_conflicts_st",
        "dram_throughput_pct",
        "rules",
        "hot_lines",
    ):
        assert key in k, key
    assert k["hot_lines"][0]["line"] == 47


def test_truncated_or_foreign_ncu_report_is_refused(tmp_path):
    data = (FIXTURES / "ncu_vector_add.ncu-rep").read_bytes()
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[:3000])  # the reader opens this as an empty report
    with pytest.raises(WorkbenchError) as err:
        ncureport.load(str(cut))
    assert err.value.problem.kind == "corrupt-report"
    assert "truncated" in err.value.problem.cause
    junk = tmp_path / "junk.csv"
    junk.write_text("a,b\n1,2\n")
    with pytest.raises(WorkbenchError) as err:
        ncureport.load(str(junk))
    assert err.value.problem.kind == "corrupt-report"


@pytest.fixture(scope="module")
def trace() -> nsysreport.NsysProfile:
    return nsysreport.load(str(FIXTURES / "nsys_vector_add.sqlite"))


def test_nsys_records_only_the_range_window(trace):
    k = trace.kernels
    assert len(k) == 10  # cudaProfilerStart/Stop around the ranges: warm-up is not in the trace
    assert set(k["name"]) == {"_add_kernel"}
    r = trace.ranges
    assert list(r["name"]) == ["vector_add:1048576:float32"]  # a registered string (textId)
    assert list(r["domain"]) == ["workbench"] and list(r["style"]) == ["PushPop"]


def test_nsys_range_summary_kernels_inside_and_gaps(trace):
    s = trace.range_summary().iloc[0]
    assert s["kernels"] == 10 and s["gpu_busy_ns"] == 29_792
    assert s["gaps"] == 9 and s["gap_sum_ns"] == pytest.approx(s["gpu_span_ns"] - 29_792)
    assert s["gap_max_ns"] == 104_514
    inside = trace.kernels_in("vector_add:1048576:float32")
    assert list(inside["name"]) == ["_add_kernel"] and inside.iloc[0]["launches"] == 10
    ks = trace.kernel_summary().set_index("name")
    assert ks.loc["_add_kernel", "instances"] == 10 and ks.loc["_add_kernel", "min_ns"] == 2944
    assert trace.kernels["gap_before_ns"].iloc[1:].notna().all()


def test_nsys_nested_ranges_of_a_workload():
    t = nsysreport.load(str(FIXTURES / "nsys_transformer.sqlite"))
    summary = t.range_summary().set_index("range")
    top = summary.loc["transformer:8x128x256x8x4:float32"]
    assert top["instances"] == 1 and top["kernels"] == 108  # 3 forward passes
    for layer in ("layer0", "layer1", "layer2", "layer3"):
        assert summary.loc[layer, "instances"] == 3 and summary.loc[layer, "kernels"] == 24
        assert summary.loc[layer, "domain"] == "workbench"
    # each kernel is charged to its innermost range
    assert t.kernels["range"].value_counts()["layer0"] == 24
    assert t.kernels["range"].value_counts()["transformer:8x128x256x8x4:float32"] == 12
    inside = t.kernels_in("layer0").set_index("name")["launches"].to_dict()
    assert inside == {
        "_matmul_kernel": 12,
        "_add_dropout_layer_norm_kernel": 6,
        "_attn_fwd": 3,
        "elementwise_kernel": 3,
    }
    assert t.kernel_summary().iloc[0]["name"] == "_matmul_kernel"


def test_corrupt_sqlite_is_refused(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes((FIXTURES / "nsys_vector_add.sqlite").read_bytes()[:5000])
    with pytest.raises(WorkbenchError) as err:
        nsysreport.load(str(bad))
    assert err.value.problem.kind == "corrupt-report"


def test_import_dispatches_on_the_suffix(tmp_path):
    assert session.import_file(str(FIXTURES / "ncu_spill_raw.csv"))["tool"] == "ncu"
    assert session.import_file(str(FIXTURES / "nsys_vector_add.sqlite"))["tool"] == "nsys"
    other = tmp_path / "x.txt"
    other.write_text("hello")
    with pytest.raises(WorkbenchError) as err:
        session.import_file(str(other))
    assert err.value.problem.kind == "unknown-report"


def test_cli_import_json_on_a_cpu_machine():
    out = cli("profile", "--import", str(FIXTURES / "ncu_spill.ncu-rep"), "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["kernels"][0]["registers_per_thread"] == 255
    out = cli("profile", "--import", str(FIXTURES / "nsys_vector_add.sqlite"))
    assert out.returncode == 0, out.stderr
    assert "vector_add:1048576:float32" in out.stdout and "_add_kernel" in out.stdout


def test_cli_profile_refuses_without_a_gpu(tmp_path):
    out = cli("profile", "vector_add", "--tool", "ncu", env={"WORKBENCH_DEVICE": "cpu"})
    assert out.returncode == 2
    assert "needs a CUDA GPU" in out.stderr and "--import" in out.stderr
    out = cli("profile", "--import", str(tmp_path / "missing.ncu-rep"), "--json")
    assert out.returncode == 2 and json.loads(out.stdout)["error"]["kind"] == "no-such-file"


@pytest.mark.skipif(
    shutil.which("nsys") is not None or Path("/opt/nvidia").exists(),
    reason="needs a machine without nsys",
)
def test_nsys_rep_without_nsys_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("CUDA_HOME", "CUDA_PATH", "WORKBENCH_NSYS"):
        monkeypatch.delenv(var, raising=False)
    rep = tmp_path / "t.nsys-rep"
    rep.write_bytes(b"\0" * 64)
    with pytest.raises(WorkbenchError) as err:
        session.import_file(str(rep))
    assert err.value.problem.kind == "tool-missing" and "WORKBENCH_NSYS" in err.value.problem.remedy
