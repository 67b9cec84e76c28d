"""FLOPs and bytes for any module: the reference's FLOPs counted by torch's FlopCounterMode (on
meta copies, causal attention halved), the inputs' and outputs' bytes, a spec's formulas winning,
ncu's counts read from real reports, and the roofline placement by intensity against the ridge
on an H100's real timings: a GEMM brought as a three-name module is compute-bound, not
"memory-far-from-peak"."""

from __future__ import annotations

import json
from dataclasses import replace

import ncu_report
import pytest
import torch
import torch.nn.functional as F
from conftest import FIXTURES, ROOT

from workbench.bench import metrics, work
from workbench.bench.metrics import FLOP_COUNTER, INPUTS_OUTPUTS, NCU, SPEC, Timings
from workbench.bench.result import BenchRecord, BenchResult, Ceilings, Sample, case_record
from workbench.catalog import loader
from workbench.catalog.discovery import discover
from workbench.catalog.spec import KernelSpec
from workbench.diagnosis import Facts, diagnose
from workbench.diagnosis import roofline as rl
from workbench.profilers import ncureport
from workbench.profilers.ncumetrics import launches

THREE_NAME = FIXTURES / "three_name"
H100_BENCH = ROOT / "reports" / "h100" / "bench.json"
"""`bench --all` of the library on an H100: real timings and the ceilings measured with them."""


def _three_name(file: str) -> KernelSpec:
    (spec,) = loader.module_specs(loader.exec_module(str(THREE_NAME / file), "test_work"))
    return spec


def _h100(name: str, shape: list[int], dtype: str) -> tuple[dict, Ceilings]:
    doc = json.loads(H100_BENCH.read_text())
    rec = next(
        r for r in doc["records"] if (r["name"], r["shape"], r["dtype"]) == (name, shape, dtype)
    )
    return rec, Ceilings.from_dict(doc["ceilings"])


def _timed(rec: dict, cost: metrics.Work, input_dtype: str | None) -> Timings:
    """The H100's timings of a case with the FLOPs and bytes the bench now gives it."""
    return Timings(
        **{k: rec[k] for k in ("ms", "ms_p20", "ms_p80", "torch_ms", "input_sets")},
        compiled=rec["compile_ms"],
        bytes=cost.bytes,
        flops=cost.flops,
        bytes_source=cost.bytes_source,
        flops_source=cost.flops_source,
        input_dtype=input_dtype,
    )


# ---- counting ----------------------------------------------------------------------------------


def test_a_three_name_matmul_counts_2mnk_and_its_inputs_and_output():
    spec = _three_name("matmul_bf16.py")
    assert spec.flops is None and spec.bytes_moved is None  # nothing declared: all counted
    args = spec.make_inputs((), None, "cpu")
    cost = work.of_case(spec, (), 2, args)
    assert (cost.flops, cost.flops_source) == (2 * 4096**3, FLOP_COUNTER)
    assert (cost.bytes, cost.bytes_source) == (3 * 4096 * 4096 * 2, INPUTS_OUTPUTS)
    # what the library's own matmul spec says for the same GEMM
    library = loader.load_spec(discover([str(ROOT / "kernels")]).find("matmul"))
    assert cost.flops == library.flops((4096, 4096, 4096))
    assert cost.bytes == library.bytes_moved((4096, 4096, 4096), 2)
    # cast as `bench --dtype float32` casts (on meta: shapes are all the count needs): the
    # bytes follow the element size, the FLOPs do not
    wide = work.of_case(spec, (), 4, spec.make_inputs((), torch.float32, "meta"))
    assert (wide.flops, wide.bytes) == (cost.flops, 2 * cost.bytes)
    # a derived irregular shape: counted at the sizes timed
    cut = work.of_case(spec, (3073,), 2, spec.make_inputs((3073,), None, "meta"))
    assert cut.flops == 2 * 3073**3 and cut.bytes == 3 * 3073 * 3073 * 2


def test_the_count_runs_on_meta_copies_and_on_the_inputs_when_meta_refuses():
    seen: list[str] = []

    def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        seen.append(a.device.type)
        return a @ b

    def data_dependent(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        seen.append(a.device.type)
        return a @ b if a.abs().max().item() < 1e9 else a  # .item(): meta cannot say

    a, b = torch.randn(64, 32), torch.randn(32, 16)
    assert work.count(matmul, (a, b)) == (2 * 64 * 32 * 16, 64 * 16 * 4)
    assert seen == ["meta"]  # shapes only: nothing computed
    seen.clear()
    assert work.count(data_dependent, (a, b)) == (2 * 64 * 32 * 16, 64 * 16 * 4)
    assert seen == ["meta", "cpu"]
    assert work.count(lambda a: a.nonexistent(), (a,)) == (None, None)


def test_bmm_and_a_batched_linear_count_their_multiply_adds():
    x, y = torch.randn(6, 40, 24), torch.randn(6, 24, 56)
    assert work.count(torch.bmm, (x, y)) == (2 * 6 * 40 * 24 * 56, 6 * 40 * 56 * 4)
    w, bias = torch.randn(56, 24), torch.randn(56)
    assert work.count(F.linear, (x, w, bias))[0] == 2 * 6 * 40 * 24 * 56


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_attention_counts_4bhssd_and_half_of_it_when_causal(causal, device):
    """torch's counter counts nothing for the CPU's fused attention and full attention for the
    others whatever is_causal says; both count the same here, causal halved."""
    q, k, v = (torch.randn(2, 4, 128, 64, device=device) for _ in range(3))
    full = 4 * 2 * 4 * 128 * 128 * 64
    expected = full // 2 if causal else full
    sdpa = F.scaled_dot_product_attention
    assert work.count(lambda q, k, v: sdpa(q, k, v, is_causal=causal), (q, k, v))[0] == expected
    assert work.count(sdpa, (q, k, v, None, 0.0, causal))[0] == expected  # positional is_causal
    # grouped-query attention: every query head does the work
    kv = (torch.randn(2, 2, 128, 64, device=device) for _ in range(2))
    gqa = work.count(lambda q, k, v: sdpa(q, k, v, is_causal=causal, enable_gqa=True), (q, *kv))
    assert gqa[0] == expected


def test_a_three_name_causal_attention_counts_half_of_full_attention():
    spec = _three_name("attention_causal_bf16.py")
    q, k, v = spec.make_inputs((), None, "meta")  # (4, 32, 4096, 128) bf16, shapes only
    cost = work.of_case(spec, (), 2, (q, k, v))
    library = loader.load_spec(discover([str(ROOT / "kernels")]).find("attention_causal"))
    assert cost.flops == library.flops((4, 32, 4096, 128)) == 4 * 4 * 32 * 4096**2 * 128 / 2
    assert cost.bytes == library.bytes_moved((4, 32, 4096, 128), 2)


def test_an_elementwise_module_counts_no_flops_and_stays_memory_placed():
    """gelu_three_name as the H100 timed it (bench.json): it had no FLOPs or bytes, so no place
    on the roofline; counted now, no FLOPs and its input and output: memory-bound."""
    spec = loader.load_spec(discover([str(ROOT / "kernels")]).find("gelu_three_name"))
    (x,) = spec.make_inputs((), None, "cpu")
    cost = work.of_case(spec, (), 4, (x,))
    assert (cost.flops, cost.flops_source) == (0.0, FLOP_COUNTER)
    assert (cost.bytes, cost.bytes_source) == (2 * x.nbytes, INPUTS_OUTPUTS)
    saved, ceil = _h100("gelu_three_name", [], "as given")
    assert saved["roofline_ratio"] is None  # as it was: not placed at all
    rec = _record("gelu_three_name", saved, ceil, cost, "float32")
    assert rec.bound == "memory" and rec.tflops == 0.0
    assert rec.roofline_ratio == pytest.approx(cost.bytes / (ceil.copy_gbps * 1e9) * 1e3 / rec.ms)
    placed = rl.from_bench(rec, BenchResult(rec.name, ceil.device, ceil, [rec]))
    assert placed.bound == "memory" and placed.ceiling == "copy bandwidth"
    assert "no FLOPs counted; FLOPs: flop-counter, bytes: inputs+outputs" in placed.text


def _record(name: str, saved: dict, ceil: Ceilings, cost: metrics.Work, dtype: str) -> BenchRecord:
    """The bench record of a three-name module's case ("as given"): the H100's timings of
    `saved`, the FLOPs and bytes counted now."""
    return case_record(
        name, [], None, ceil, Sample(saved["check"], _timed(saved, cost, dtype)), "default"
    )


def test_inputs_count_each_element_once():
    a = torch.randn(64, 32)
    qkv = torch.randn(3, 2, 8, 16)
    row = torch.randn(32)
    assert work.input_bytes((a, a)) == a.nbytes  # passed twice, read once
    assert work.input_bytes(tuple(qkv.unbind(0))) == qkv.nbytes  # three views of one tensor
    assert work.input_bytes((a[:, :8],)) == 64 * 8 * 4  # a strided view reads its elements
    assert work.input_bytes((row.expand(64, 32),)) == row.nbytes  # broadcast rows, read once
    assert work.input_bytes((a, 2.0, None, [row])) == a.nbytes + row.nbytes


def test_a_spec_formula_wins_over_the_count():
    spec = _three_name("matmul_bf16.py")
    declared = replace(spec, flops=lambda s: 123.0, bytes_moved=lambda s, e: 456.0 * e)
    args = spec.make_inputs((), None, "meta")
    assert work.of_case(declared, (), 2, args) == metrics.Work(123.0, SPEC, 912.0, SPEC)
    half = replace(spec, flops=lambda s: 123.0)
    assert work.of_case(half, (), 2, args) == metrics.Work(
        123.0, SPEC, 3 * 4096 * 4096 * 2.0, INPUTS_OUTPUTS
    )


# ---- the roofline: intensity against the ridge -------------------------------------------------


def test_a_three_name_gemm_above_the_ridge_is_compute_bound():
    """The library's bf16 GEMM as the H100 timed it at 4096^3 (0.182 ms), brought as a
    three-name module: placed by its counted FLOPs, compute-bound at its TFLOP/s over the
    bf16 matmul rate measured in the same run."""
    spec = _three_name("matmul_bf16.py")
    cost = work.of_case(spec, (), 2, spec.make_inputs((), None, "meta"))
    saved, ceil = _h100("matmul", [4096, 4096, 4096], "bfloat16")
    rec = _record("matmul_bf16", saved, ceil, cost, "bfloat16")
    ridge = metrics.ridge(ceil.copy_gbps, ceil.matmul_rate("bfloat16"))
    intensity = metrics.intensity(rec.flops, rec.bytes)
    assert intensity == pytest.approx(4096 / 3) and intensity > ridge
    assert rec.bound == "compute" and rec.tflops == pytest.approx(saved["tflops"])
    assert rec.roofline_ratio == pytest.approx(saved["tflops"] / ceil.matmul_rate("bfloat16"))
    placed = rl.from_bench(rec, BenchResult(rec.name, ceil.device, ceil, [rec]))
    assert (placed.bound, placed.ceiling) == ("compute", "the measured matmul rate")
    assert placed.figures["intensity"] > placed.figures["ridge"] == pytest.approx(ridge)
    assert "FLOPs: flop-counter, bytes: inputs+outputs" in placed.text
    assert f"{ridge:,.0f}" in placed.text and "over the ridge" in placed.text


def test_a_fast_gemm_brought_as_three_names_has_no_memory_far_from_peak():
    """The spill-free matmul's H100 facts (533 TFLOP/s in fp16), its bench record made as a
    three-name module's: before, with no FLOPs, it sat at 0.13x of copy bandwidth with a high
    memory-far-from-peak; counted, it is compute-bound near the fp16 matmul rate."""
    facts = Facts.from_dict(
        json.loads((FIXTURES / "diagnosis" / "facts_h100_pitfall_spill_fixed.json").read_text())
    )
    saved = facts.bench.records[0].to_dict()
    spec = _three_name("matmul_bf16.py")
    cost = work.of_case(spec, (), 2, spec.make_inputs((), torch.float16, "meta"))
    rec = _record("matmul_bf16", saved, facts.bench.ceilings, cost, "float16")
    facts.launch = replace(facts.launch, shape=[], dtype=None)
    facts.bench = BenchResult(rec.name, facts.bench.device, facts.bench.ceilings, [rec])
    d = diagnose(facts)
    assert d.roofline["bound"] == "compute" and d.roofline["near_peak"]
    assert d.roofline["ratio"] == pytest.approx(
        saved["tflops"] / facts.bench.ceilings.matmul_rate("float16")
    )
    assert (
        d.roofline["flops_source"] == FLOP_COUNTER and d.roofline["bytes_source"] == INPUTS_OUTPUTS
    )
    assert all(f.id != "memory-far-from-peak" for f in d.findings)
    # the same facts as the bench gave them before: bytes alone, and the false alarm
    bytes_only = replace(rec, flops=None, flops_source=None)
    facts.bench = BenchResult(rec.name, facts.bench.device, facts.bench.ceilings, [bytes_only])
    far = [f for f in diagnose(facts).findings if f.id == "memory-far-from-peak"]
    assert far and far[0].severity == "high" and "no FLOP count" in far[0].title


# ---- what ncu counted --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spill_memory() -> dict:
    """pitfall_spill at 1024x1024x512 fp16 under the memory preset (an H100, ncu 2025.3)."""
    return ncureport.load(str(FIXTURES / "ncu_spill_memory.ncu-rep")).to_dict()


def test_ncu_dram_bytes_are_the_reports_reads_plus_writes(spill_memory):
    action = (
        ncu_report.load_report(str(FIXTURES / "ncu_spill_memory.ncu-rep"))
        .range_by_idx(0)
        .action_by_idx(0)
    )
    raw = sum(action.metric_by_name(f"dram__bytes_{rw}.sum").value() for rw in ("read", "write"))
    (launch,) = launches(spill_memory)
    assert launch.dram_bytes == raw > 0
    assert launch.tensor_flops is None and launch.fp_flops is None  # not collected then
    assert rl.ncu_counts([launch]) == (None, raw)


def _spill_case(
    spill_memory: dict, flops_source: str, bytes_source: str
) -> tuple[BenchRecord, BenchResult]:
    """pitfall_spill's profiled case as a bench record: the GEMM's counted FLOPs and bytes, the
    launch's own duration as its time."""
    (launch,) = launches(spill_memory)
    a, b = torch.empty(1024, 512, dtype=torch.float16), torch.empty(512, 1024, dtype=torch.float16)
    flops, written = work.count(torch.matmul, (a, b))
    rec = BenchRecord(
        "pitfall_spill", [1024, 1024, 512], "float16", "NVIDIA H100 80GB HBM3",
        ms=launch.duration_ns / 1e6, flops=flops, flops_source=flops_source,
        bytes=work.input_bytes((a, b)) + written, bytes_source=bytes_source,
    )  # fmt: skip
    _, ceil = _h100("matmul", [4096, 4096, 4096], "bfloat16")
    return rec, BenchResult(rec.name, ceil.device, ceil, [rec])


def test_ncu_dram_bytes_below_the_inputs_and_outputs_leave_them(spill_memory):
    """ncu counted 2.1 MB of DRAM traffic for a GEMM that reads 2 MB and writes 2 MB: the
    output was still in L2 when the kernel ended. The inputs and outputs stay the bytes."""
    rec, bench = _spill_case(spill_memory, FLOP_COUNTER, INPUTS_OUTPUTS)
    launches = rl.case_launches(spill_memory, rec)
    assert [k.range for k in launches] == ["pitfall_spill:1024x1024x512:float16"]
    assert launches[0].dram_bytes < rec.bytes
    placed = rl.from_bench(rec, bench, launches)
    assert placed.figures["bytes_source"] == INPUTS_OUTPUTS and placed.figures["bytes"] == rec.bytes
    assert placed.figures["ncu_dram_bytes"] == launches[0].dram_bytes
    assert rl.case_launches(spill_memory, replace(rec, name="pitfall_spill_fixed")) == []


def test_ncu_flops_replace_the_count_and_a_spec_still_wins(spill_memory):
    rec, bench = _spill_case(spill_memory, FLOP_COUNTER, SPEC)
    (launch,) = launches(spill_memory)
    counted = replace(launch, tensor_flops=1.02 * rec.flops, fp_flops=0.01 * rec.flops)
    placed = rl.from_bench(rec, bench, [counted])
    assert placed.figures["flops_source"] == NCU and placed.figures["flops"] == pytest.approx(
        1.03 * rec.flops
    )
    assert placed.figures["ncu_tflops"] == pytest.approx(
        1.03 * rec.flops / launch.duration_ns / 1e3
    )
    assert placed.figures["bytes_source"] == SPEC and placed.figures["bytes"] == rec.bytes
    assert "FLOPs: ncu, bytes: spec" in placed.text
    declared = rl.from_bench(replace(rec, flops_source=SPEC), bench, [counted])
    assert declared.figures["flops_source"] == SPEC and declared.figures["flops"] == rec.flops


def test_ncu_counts_a_gemms_flops_exactly_on_a_real_report():
    """The three-name bf16 GEMM (4096^3) profiled on an H200 with the FLOP counters every preset
    now collects: ncu's tensor-path count is exactly 2 M N K, and with the bench of the same
    run the GEMM is placed compute-bound from ncu's FLOPs, near the measured matmul rate."""
    summary = ncureport.load(str(FIXTURES / "ncu_matmul_bf16_h200.ncu-rep")).to_dict()
    (launch,) = launches(summary)
    assert launch.tensor_flops == 2 * 4096**3 and launch.fp_flops == 0
    doc = json.loads((FIXTURES / "work_h200_matmul_bf16.json").read_text())
    bench = BenchResult.from_dict(doc["result"])
    (rec,) = bench.records
    assert (rec.flops, rec.flops_source) == (2 * 4096**3, FLOP_COUNTER)
    placed = rl.from_bench(rec, bench, [launch])
    assert placed.bound == "compute" and placed.figures["flops_source"] == NCU
    assert placed.ratio == pytest.approx(rec.tflops / 714.7, rel=0.05)
    ncu_rate = launch.tensor_flops / launch.duration_ns / 1e3
    assert ncu_rate == pytest.approx(rec.tflops, rel=0.10)  # the goal: within 10 % of ncu


def test_spill_traffic_is_left_out_of_the_bytes_that_place_a_kernel(spill_memory):
    """A spilling GEMM whose spills reach DRAM: ncu's DRAM bytes counted whole would place it
    under a memory ceiling its own spills built. Less the local (spill) traffic ncu counted,
    the bytes fall back to the GEMM's inputs and outputs and it is compute-bound, saying what
    was left out; without local traffic the same DRAM bytes are the kernel's own."""
    rec, bench = _spill_case(spill_memory, FLOP_COUNTER, INPUTS_OUTPUTS)
    (launch,) = launches(spill_memory)
    assert launch.local_bytes > 10 * rec.bytes
    spilled = replace(launch, dram_bytes=10 * rec.bytes)  # as on the H200: spills past L2
    placed = rl.from_bench(rec, bench, [spilled])
    assert placed.figures["bytes_source"] == INPUTS_OUTPUTS and placed.figures["bytes"] == rec.bytes
    assert placed.figures["intensity"] > placed.figures["ridge"] and placed.bound == "compute"
    assert placed.figures["ncu_local_bytes"] == launch.local_bytes
    assert "spill traffic left out of the bytes" in placed.text
    own = rl.from_bench(rec, bench, [replace(spilled, local_bytes=None)])
    assert own.figures["bytes_source"] == NCU and own.figures["bytes"] == 10 * rec.bytes
    assert own.bound == "memory" and "spill" not in own.text
    assert "it moves 10x its inputs and outputs" in own.text
    partly = replace(spilled, local_bytes=4 * rec.bytes)
    assert rl.work_bytes([partly]) == pytest.approx(6 * rec.bytes)
