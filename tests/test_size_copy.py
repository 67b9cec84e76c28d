"""The copy of each bench case's own bytes (`size_copy_ms`, `vs_copy`) on real H100 rows: its
arithmetic, where the bench's tables show it, results stored before it read as "-", and the
diagnosis that no longer calls a kernel as fast as that copy far from peak.

The kernel timings are the H100's (reports/h100/bench.json, tests/fixtures); a same-size copy
was not timed then, so each test sets the copy's time it needs beside them."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import FIXTURES, ROOT
from test_diagnosis_rank import B_ADD, _slower, bench

from workbench.bench import metrics
from workbench.bench import report as benchreport
from workbench.bench.job import run_bench
from workbench.bench.metrics import Timings, derived
from workbench.bench.result import BenchRecord, BenchResult, Ceilings, Sample
from workbench.catalog.discovery import discover
from workbench.catalog.loader import load_spec
from workbench.cli.bench import summary_table
from workbench.diagnosis import Facts, diagnose
from workbench.diagnosis.rank import MIN_GAIN
from workbench.diagnosis.roofline import AS_FAST_AS_COPY, far_from_peak
from workbench.views import bench as benchview

H100 = json.loads((FIXTURES / "h100_report_before_copy.json").read_text())
"""The H100's bench report as it stood before a same-size copy was timed beside each case."""
COPY_REACH = 0.93
"""What a copy of a case's bytes is taken to reach of the 1 GiB copy's bandwidth here."""


def _h100(name: str, shape: list[int], dtype: str) -> dict:
    return next(
        r for r in H100["records"] if (r["name"], r["shape"], r["dtype"]) == (name, shape, dtype)
    )


def _size_copy_ms(rec: dict, reach: float = COPY_REACH) -> float:
    """A copy of the row's bytes at `reach` of the measured copy bandwidth, in ms."""
    return rec["bytes"] / (H100["ceilings"]["copy_gbps"] * 1e9) * 1e3 / reach


def _rebench(saved: dict, size_copy_ms: float | None) -> BenchRecord:
    """The real bench loop on the H100's timings of one case, a same-size copy timed beside."""

    def measure(shape, dtype, seed) -> Sample:  # type: ignore[no-untyped-def]
        timings = Timings(
            **{k: saved[k] for k in ("ms", "ms_p20", "ms_p80", "torch_ms", "bytes", "flops")},
            compiled=saved["compile_ms"],
            input_sets=saved["input_sets"],
            bytes_source=saved.get("bytes_source"),
            flops_source=saved.get("flops_source"),
            size_copy_ms=size_copy_ms,
        )
        return Sample(saved["check"], timings)

    spec = load_spec(discover([str(ROOT / "kernels")]).find(saved["name"]))
    ceil = Ceilings.from_dict(H100["ceilings"])
    result = run_bench(spec, lambda e: None, ceil, measure, [saved["shape"]], [saved["dtype"]])
    (rec,) = result.records
    assert rec.status == "ok", rec.problem
    return rec


@pytest.mark.parametrize(
    ("nbytes", "each"),
    [(134217728.0, 67108864), (268468224, 134234112), (45056.0, 22528), (40, 16), (8, 16)],
)
def test_a_same_size_copy_moves_half_the_bytes_each_way_in_whole_vectors(nbytes, each):
    assert metrics.copy_each_way(nbytes) == each
    assert each % metrics.COPY_ALIGN == 0


@pytest.mark.parametrize("nbytes", [None, 0, 0.0])
def test_no_byte_count_no_copy(nbytes):
    assert metrics.copy_each_way(nbytes) is None


def test_the_record_carries_the_copy_and_the_kernel_against_it():
    """softmax 32768x1024 bfloat16 on the H100: 0.81 of the 1 GiB copy's bandwidth, and 0.87
    of a copy of its 134 MB that reaches 0.93."""
    saved = _h100("softmax", [32768, 1024], "bfloat16")
    rec = _rebench(saved, _size_copy_ms(saved))
    # the roofline as it was (the row's own run measured the copy ceiling 0.04 % apart)
    assert rec.roofline_ratio == pytest.approx(saved["roofline_ratio"], rel=1e-3)
    assert rec.size_copy_ms == pytest.approx(_size_copy_ms(saved))
    assert rec.vs_copy == pytest.approx(_size_copy_ms(saved) / saved["ms"])
    assert rec.vs_copy == pytest.approx(rec.roofline_ratio / COPY_REACH)
    d = rec.to_dict()
    assert d["size_copy_ms"] == rec.size_copy_ms and d["vs_copy"] == rec.vs_copy
    assert BenchRecord.from_dict(json.loads(json.dumps(d))) == rec
    # timed without a byte count: both keys are there, null
    bare = _rebench({**saved, "bytes": None}, None)
    assert bare.to_dict()["size_copy_ms"] is None and bare.to_dict()["vs_copy"] is None


def test_tables_show_vs_copy_and_an_old_result_reads_as_a_dash():
    saved = _h100("softmax", [32768, 1024], "bfloat16")
    new = _rebench(saved, _size_copy_ms(saved))
    old = BenchRecord.from_dict(saved)  # stored before the copy was timed
    assert "size_copy_ms" not in saved and old.size_copy_ms is None and old.vs_copy is None
    for rec, cell in ((new, f"{new.vs_copy:.2f}"), (old, "-")):
        row = dict(zip(benchview.HEADERS, benchview.row(rec)))
        assert row["vs copy"] == cell and row["roofline"] == f"{saved['roofline_ratio']:.2f}"
    table = summary_table([new, old]).splitlines()
    head = table[0].split()
    assert head[head.index("roofline") + 1 : head.index("roofline") + 3] == ["vs", "copy"]
    assert f" {new.vs_copy:.2f} " in table[2] and f" {new.vs_copy:.2f} " not in table[3]
    doc = {**H100, "records": [new.to_dict(), saved]}
    rows = [line for line in benchreport.markdown(doc).splitlines() if line.startswith("| softmax")]
    cells = [
        dict(zip(benchreport.TABLE_HEADERS, (c.strip() for c in r.strip("|").split("|"))))
        for r in rows
    ]
    assert [c["vs copy"] for c in cells] == [f"{new.vs_copy:.2f}", "-"]
    assert "`vs copy`" in benchreport.markdown(doc)


def test_every_stored_h100_result_still_reads():
    for path in (FIXTURES / "h100_report_before_copy.json", FIXTURES / "bench_h100_partial.json"):
        doc = json.loads(path.read_text())
        result = BenchResult.from_dict({**doc, "kernel": "all"})
        assert all(r.vs_copy is None and r.size_copy_ms is None for r in result.records)
        assert all(
            benchview.row(r)[benchview.HEADERS.index("vs copy")] == "-" for r in result.records
        )


def test_the_h100_report_holds_its_memory_bound_rows_to_a_copy_of_their_bytes():
    """reports/h100: the rows benched since hold vs copy for memory-bound cases only; measured,
    the library's softmax and norms move their bytes as fast as a copy of them (0.98-1.02)."""
    doc = json.loads((ROOT / "reports" / "h100" / "bench.json").read_text())
    records = BenchResult.from_dict({**doc, "kernel": "all"}).records
    copied = [r for r in records if r.vs_copy is not None]
    assert {r.name for r in copied} >= {"softmax", "layer_norm", "rms_norm"}
    assert all(r.bound == "memory" and 0.95 <= r.vs_copy <= 1.05 for r in copied)
    assert all(r.vs_copy is None for r in records if r.bound == "compute")


def _far(vs_copy: float | None) -> Facts:
    """The H100's vector_add, its time made 3x longer (0.34 of copy bandwidth), a copy of its
    bytes timed at `vs_copy` of the kernel's time."""
    slow = bench("vector_add", B_ADD)
    records = [_slower(r, 3.0) for r in slow.records]
    if vs_copy is not None:
        records = [replace(r, size_copy_ms=r.ms * vs_copy, vs_copy=vs_copy) for r in records]
    return Facts("vector_add", bench=replace(slow, records=records))


def test_a_kernel_as_fast_as_a_copy_of_its_bytes_is_not_far_from_peak():
    (found,) = far_from_peak(_far(AS_FAST_AS_COPY))
    assert found.severity == "info" and found.evidence["severity_before"] == "medium"
    assert found.evidence["vs_copy"] == AS_FAST_AS_COPY
    ratio = found.evidence["size_copy_ratio"]
    assert ratio == pytest.approx(1.0096 / 3 / AS_FAST_AS_COPY, abs=1e-3)
    said = f"a copy of these 3,221 MB reaches {ratio:.2f}x"
    assert said in found.title
    assert found.evidence["demoted"].startswith(
        f"{said} of copy bandwidth, and the kernel takes 1.02x"
    )
    assert "the input's size" in found.evidence["demoted"]
    d = diagnose(_far(1.0))
    assert (
        d.roofline["vs_copy"] == 1.0 and said.replace(f"{ratio:.2f}", "0.34") in d.roofline["text"]
    )
    (far,) = [f for f in d.findings if f.id == "memory-far-from-peak"]
    assert far.severity == "info" and "as fast as a copy of this size" in far.evidence["demoted"]


def test_a_kernel_slower_than_a_copy_of_its_bytes_stays_far_with_the_copy_in_its_words():
    (edge,) = far_from_peak(_far(AS_FAST_AS_COPY - 0.001))  # just outside the noise
    assert edge.severity == "medium" and "demoted" not in edge.evidence
    (half,) = far_from_peak(_far(0.5))
    assert half.severity == "medium" and half.evidence["vs_copy"] == 0.5
    assert "; a copy of these 3,221 MB reaches 0.67x" in half.title
    assert half.gain == pytest.approx(0.5)  # no faster than the copy: not the 0.66 headroom
    d = diagnose(_far(0.5))
    assert d.roofline["headroom"] == pytest.approx(0.5)
    assert d.roofline["text"].startswith(
        "memory-bound at 0.34x of copy bandwidth; a copy of these 3,221 MB reaches 0.67x (bench:"
    )
    assert d.roofline["text"].endswith("up to 50% of the time to gain")
    (old,) = far_from_peak(_far(None))  # stored before the copy was timed
    assert "vs_copy" not in old.evidence and "a copy of these" not in old.title
    assert old.gain == pytest.approx(1 - 1.0096 / 3, abs=1e-3)
    # less than MIN_GAIN to gain before it is as fast as the copy: info, as any small gain
    d = diagnose(_far(1 - MIN_GAIN / 2))
    (far,) = [f for f in d.findings if f.id == "memory-far-from-peak"]
    assert far.severity == "info" and far.gain == pytest.approx(MIN_GAIN / 2)
    assert far.evidence["demoted"].endswith("reaches 0.35x: nothing left to gain")


def test_a_compute_bound_case_is_not_held_to_a_copy():
    """The H100 attention bf16 d128 row: 1.938 ms, bytes 537 MB, 1.1 TFLOP: its floor is its
    FLOPs, so a copy of its bytes (0.18 ms) says nothing about it."""
    t = Timings(ms=1.938, ms_p20=1.93, ms_p80=1.95, torch_ms=1.86, compiled="n/a",
                bytes=536870912.0, flops=1.1e12, input_sets=1, size_copy_ms=0.1803)  # fmt: skip
    compute = derived(t, copy_gbps=3003.0, matmul_tflops=787.0)
    assert compute["bound"] == "compute" and compute["vs_copy"] is None
    memory = derived(replace(t, flops=1.0), copy_gbps=3003.0, matmul_tflops=787.0)
    assert memory["bound"] == "memory" and memory["vs_copy"] == pytest.approx(0.1803 / 1.938)
