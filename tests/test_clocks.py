"""The SM clock a timing ran at, on a CPU machine: NVML's reason bits in words, the samples'
summary, when a clock was held back, the case record with and without clocks (results stored
before they were kept read as they were), the views, the bench report and the report's bench
notes, the `clock-held-back` finding, and no NVML here giving None without a word.

The readings are an H100's while it timed a flash-attention kernel with do_bench: the kernel at a
median 1545 of 1980 MHz drawing 652 W of its 700 W limit, torch's SDPA at 1650 MHz and 565 W, both
with the power-cap reason set (the bench said 1.96 ms, the sweep's short batches 1.81 ms)."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import FIXTURES
from test_history import H100, T0, bench_result, put

from workbench.bench import clocks
from workbench.bench import report as benchreport
from workbench.bench.clock_rules import (
    REASONS,
    Clocks,
    case_note,
    held_back,
    reason_words,
    summary,
)
from workbench.bench.result import BenchRecord, BenchResult
from workbench.diagnosis import diagnose
from workbench.diagnosis.facts import Facts
from workbench.report.write import write
from workbench.run.store import Store
from workbench.views import bench as bench_view

POWER_CAP, HW_SLOWDOWN, THERMAL = 0x4, 0x8, 0x20
IDLE, APP_CLOCKS, SYNC_BOOST = 0x1, 0x2, 0x10
MAX_MHZ, LIMIT_MW = 1980.0, 700_000.0


def _attention() -> Clocks:
    """The kernel's samples: the clock settling from boost to the cap, power near the limit."""
    mhz = [1980, 1755, 1605, 1560, 1545, 1545, 1530, 1545, 1545, 1530, 1545]
    mw = [412_000, 598_000, 641_000, 650_000, 652_000, 652_000, 653_000, 652_000, 652_000, 651_000]
    mw.append(652_000)
    masks = [IDLE, POWER_CAP, POWER_CAP, POWER_CAP | HW_SLOWDOWN] + [POWER_CAP] * 7
    got = summary(mhz, mw, masks, MAX_MHZ, LIMIT_MW)
    assert got is not None
    return got


def _sdpa() -> Clocks:
    got = summary([1650] * 9, [565_000] * 9, [POWER_CAP] * 9, MAX_MHZ, LIMIT_MW)
    assert got is not None
    return got


def _full_speed() -> Clocks:
    """A memory-bound kernel: the clock at boost, the power cap flickering at its edge."""
    got = summary([1980, 1980, 1965, 1980], [380_000] * 4, [0, POWER_CAP, 0, 0], MAX_MHZ, LIMIT_MW)
    assert got is not None
    return got


def test_reason_bits_in_words_leave_out_what_is_not_power_or_heat():
    assert reason_words(POWER_CAP) == ["power cap"]
    assert reason_words(IDLE | APP_CLOCKS | SYNC_BOOST | 0x100) == []  # 0x100: display clock
    assert reason_words(THERMAL | POWER_CAP | IDLE) == ["power cap", "thermal"]
    assert reason_words(0x1FF) == list(REASONS.values())
    assert reason_words(0) == []


def test_samples_summarise_as_median_min_and_the_reasons_any_sample_saw():
    c = _attention()
    assert (c.sm_mhz, c.sm_mhz_min, c.max_mhz) == (1545.0, 1530.0, 1980.0)
    assert c.power_w == 652.0 and c.power_limit_w == 700.0 and c.samples == 11
    assert c.reasons == ["power cap", "hardware slowdown"]
    assert c.ratio == pytest.approx(0.780, abs=1e-3)
    assert _sdpa().text == "1650/1980 MHz, 565 W (power cap)"
    assert summary([], [], [], MAX_MHZ, LIMIT_MW) is None  # no clock read: no clocks
    bare = summary([1410.0], [], [], None, None)
    assert bare is not None and bare.text == "1410 MHz" and bare.power_w is None


def test_held_back_needs_a_low_clock_and_a_power_or_heat_reason():
    assert held_back(_attention()) and held_back(_sdpa())
    assert not held_back(_full_speed())  # power cap seen, clock at 99 %
    no_reason = summary([1545.0] * 5, [300_000] * 5, [APP_CLOCKS] * 5, MAX_MHZ, LIMIT_MW)
    assert not held_back(no_reason)  # clocks locked by hand: not the kernel's draw
    unknown_max = summary([1545.0] * 5, [652_000] * 5, [POWER_CAP] * 5, None, LIMIT_MW)
    assert not held_back(unknown_max) and not held_back(None)
    assert not held_back(_sdpa(), ratio=0.8)  # the row's threshold decides: 0.83 is over 0.8


def test_case_note_only_where_a_clock_was_held_back():
    assert case_note(_attention(), _sdpa()) == (
        "clock held back while timed: kernel 1545/1980 MHz, 652 W (power cap, hardware "
        "slowdown); torch 1650/1980 MHz, 565 W (power cap)"
    )
    assert case_note(_full_speed(), _sdpa()).startswith("clock held back while timed: kernel 1980")
    assert case_note(_full_speed(), _full_speed()) is None
    assert case_note(None, None) is None


def _record(rec: dict, kernel: Clocks | None, ref: Clocks | None) -> BenchRecord:
    out = BenchRecord.from_dict(rec)
    out.clocks, out.torch_clocks = kernel, ref
    return out


def test_a_record_keeps_its_clocks_and_one_stored_before_reads_without_them():
    stored = H100["records"][0]  # vector_add as the H100 bench wrote it, before clocks
    old = BenchRecord.from_dict(stored)
    assert old.clocks is None and old.torch_clocks is None
    written = old.to_dict()
    assert "clocks" not in written and "torch_clocks" not in written  # none: none written
    assert {k: written[k] for k in stored} == stored

    rec = _record(stored, _attention(), _sdpa())
    written = json.loads(json.dumps(rec.to_dict()))  # as the event, the store and bench.json
    assert written["clocks"]["sm_mhz"] == 1545.0 and written["torch_clocks"]["power_w"] == 565.0
    back = BenchRecord.from_dict(written)
    assert back.clocks == _attention() and back.torch_clocks == _sdpa()
    result = BenchResult.from_dict(bench_result(H100, "vector_add"))
    result.records[0] = rec
    assert BenchResult.from_dict(json.loads(json.dumps(result.to_dict()))).records[0] == back


def test_views_show_a_held_back_clock_and_nothing_for_the_rest():
    stored = H100["records"][0]
    assert bench_view.clock_line(BenchRecord.from_dict(stored)) is None
    assert bench_view.clock_line(_record(stored, _full_speed(), _full_speed())) is None
    line = bench_view.clock_line(_record(stored, _attention(), _sdpa()))
    assert line == "268435456 float32: " + case_note(_attention(), _sdpa())
    row = bench_view.row(_record(stored, _attention(), _sdpa()))
    assert row == bench_view.row(BenchRecord.from_dict(stored))  # the table's columns stay


def test_the_bench_report_notes_a_held_back_clock_and_stays_clean_otherwise():
    plain = benchreport.markdown(H100)
    assert "clock held back" not in plain
    doc = copy.deepcopy(H100)
    doc["records"][1]["clocks"] = _full_speed().to_dict()
    assert benchreport.markdown(doc) == plain  # at full speed: nothing to say
    doc["records"][0]["clocks"] = _attention().to_dict()
    doc["records"][0]["torch_clocks"] = _sdpa().to_dict()
    noted = benchreport.markdown(doc)
    assert (
        "- vector_add 268435456 float32: clock held back while timed: kernel 1545/1980 MHz, "
        "652 W (power cap, hardware slowdown); torch 1650/1980 MHz, 565 W (power cap)"
    ) in noted
    assert noted.count("clock held back") == 1


def test_the_report_page_notes_the_clock_under_its_bench_table(tmp_path):
    result = bench_result(H100, "vector_add")
    result["records"][0]["clocks"] = _attention().to_dict()
    put("bench", "vector_add", result, T0)
    report = write(["vector_add"], tmp_path / "out", "md", Store())
    page = report.kernels[0].page.read_text()
    assert "kernel 1545/1980 MHz, 652 W (power cap, hardware slowdown)" in page.replace("\\", "")


def _facts(kernel: Clocks | None, ref: Clocks | None = None) -> Facts:
    """The spilling fp16 GEMM as the H100 diagnosed it, its bench case timed at `kernel`."""
    doc = json.loads((FIXTURES / "diagnosis" / "facts_h100_pitfall_spill.json").read_text())
    facts = Facts.from_dict(doc)
    assert facts.bench is not None
    rec = facts.bench.records[0]
    rec.clocks, rec.torch_clocks = kernel, ref
    return facts


def test_the_finding_says_the_clock_the_power_the_reason_and_what_holds():
    d = diagnose(_facts(_attention(), _sdpa()))
    (found,) = [f for f in d.findings if f.id == "clock-held-back"]
    assert found.severity == "info"
    assert found.title == (
        "SM clock held back while timed: 1545 of 1980 MHz (78%) at 652 of 700 W "
        "(power cap, hardware slowdown)"
    )
    e = found.evidence
    assert e["clock_ratio"] == 0.78 and e["threshold"] == 0.9
    assert e["case"] == "float16 4096x4096x4096"
    assert e["torch"] == "1650/1980 MHz, 565 W (power cap)"
    assert "the sweep's batches" in e["why"] and "ratio to torch" in e["why"]
    assert "ratios timed in the same run" in found.fix and "energy per result" in found.fix
    assert "fewer instructions per FLOP" in found.fix
    # the other findings are the diagnosis's as it was
    before = [f.id for f in diagnose(_facts(None)).findings]
    assert [f.id for f in d.findings if f.id != "clock-held-back"] == before


@pytest.mark.parametrize(
    "kernel",
    [None, _full_speed(), summary([1545.0] * 5, [300_000] * 5, [APP_CLOCKS] * 5, 1980.0, None)],
    ids=["stored-before", "full-speed", "no-power-reason"],
)
def test_the_finding_stays_silent_where_the_clock_was_not_held_back(kernel: Clocks | None):
    d = diagnose(_facts(kernel, _sdpa()))  # torch's held-back clock alone says nothing of ours
    assert "clock-held-back" not in [f.id for f in d.findings]


def test_without_nvml_the_clocks_are_none_and_the_timing_runs_as_it_would():
    with clocks.sampled() as sampler:
        ran = True
    assert ran and sampler is None  # this machine has no NVIDIA driver (nor, as a rule, pynvml)
    assert clocks.during(lambda: 42) == (42, None)
    with pytest.raises(ZeroDivisionError):  # the block's own failure is not swallowed
        clocks.during(lambda: 1 / 0)
