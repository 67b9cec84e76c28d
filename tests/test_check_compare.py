"""The comparison at the heart of `check`, on hand-made outputs (pure torch, no kernels)."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import compare_spec

from workbench.catalog.spec import KernelSpec, Tolerance
from workbench.check import compare as comparison
from workbench.check import exact
from workbench.check.compare import boundary_blocks, compare
from workbench.check.result import CaseResult
from workbench.runtime import tensors


def _spec() -> KernelSpec:
    return KernelSpec("t", torch.clone, torch.clone, lambda s, d, dev: (), {"check": [(1,)]})


def _compare(out: torch.Tensor, ref: torch.Tensor) -> CaseResult:
    case = CaseResult("check", list(ref.shape), "float32", "contiguous")
    compare(_spec(), case, [out], [ref], "float32")
    return case


@pytest.mark.parametrize("chunk", [comparison.CHUNK, 7])  # chunked and whole give the same verdict
def test_missing_tail_is_unwritten_and_boundary_only(monkeypatch, chunk):
    monkeypatch.setattr(comparison, "CHUNK", chunk)
    ref = torch.randn(4, 1000)
    out = ref.clone()
    tensors.fill_nan(out[:, 992:], tensors.UNWRITTEN)  # a 16-wide tile's last tile not written
    case = _compare(out, ref)
    assert case.status == "failed"
    assert case.unwritten == 4 * 8 and case.bad == 4 * 8
    assert case.boundary_only and case.boundary_block == 16
    assert case.worst_index[1] >= 992


def test_scattered_errors_are_not_boundary_errors():
    ref = torch.randn(4, 1000)
    out = ref.clone()
    out[1, 10] += 1.0
    out[3, 999] += 1.0
    case = _compare(out, ref)
    assert case.status == "failed" and not case.boundary_only
    assert case.worst_index in ([1, 10], [3, 999])
    assert case.max_abs_diff == pytest.approx(1.0, rel=1e-6)


def test_rounding_noise_passes_and_rel_l2_is_reported():
    ref = torch.randn(10_000, dtype=torch.float64)
    out = (ref * (1 + 1e-7)).float()
    case = _compare(out, ref.float())
    assert case.status == "passed"
    assert 0 < case.rel_l2 < 1e-6


def test_matching_infinities_are_equal():
    ref = torch.tensor([float("inf"), -float("inf"), 1.0])
    assert _compare(ref.clone(), ref).status == "passed"


def test_boundary_blocks_two_dims():
    # errors in the last 3 rows of a 35-row matrix: the partial tail of 16- and 32-row tiles
    flat = torch.tensor([32 * 48 + 5, 34 * 48 + 47])
    assert boundary_blocks(flat, (35, 48)) == [16, 32]
    assert boundary_blocks(torch.tensor([40 * 48]), (50, 48)) == [32]  # rows 32..49 of 32
    assert boundary_blocks(torch.tensor([3 * 48]), (35, 48)) == []
    assert boundary_blocks(torch.tensor([3072]), (3073,)) == [16, 32, 64, 128, 256, 512, 1024, 2048]


def test_bitwise_equal_reads_a_one_element_strided_view():
    view = torch.zeros(1, 2)[:, ::2]  # (1, 1) with stride 2: .contiguous() keeps that stride
    assert tensors.bitwise_equal(view, view.clone())
    assert not tensors.bitwise_equal(view, view + 1)


# ---- the calibrated rule -----------------------------------------------------------------------


def _tile_matmul(a: torch.Tensor, b: torch.Tensor, accumulator: torch.dtype) -> torch.Tensor:
    """A tutorial matmul's numerics: each 64-wide K slice multiplied in fp32 and added to the
    running sum, kept in `accumulator`; one rounding to bf16 at the store."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=accumulator)
    for k0 in range(0, a.shape[1], 64):
        acc = (acc.float() + a[:, k0 : k0 + 64].float() @ b[k0 : k0 + 64].float()).to(accumulator)
    return acc.bfloat16()


def _split_k(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A GEMM that adds four partial products in the output dtype (a split-K reducing in bf16):
    a reference whose own rounding error at bf16 is several times one rounding's."""
    step = -(-a.shape[1] // 4)
    parts = [(a[:, k : k + step] @ b[k : k + step]).to(a.dtype) for k in range(0, a.shape[1], step)]
    out = parts[0]
    for p in parts[1:]:
        out = (out + p).to(a.dtype)
    return out


def _calibrated(reference, out: torch.Tensor, *args: torch.Tensor, dtype="bfloat16") -> CaseResult:
    wider = exact.run(reference, args)
    assert wider.precision == "float64", wider.why
    case = CaseResult("check", list(out.shape), dtype, "contiguous")
    compare(_spec(), case, [out], tensors.outputs(reference(*args)), dtype, wider)
    return case


@pytest.mark.parametrize("reference", [torch.matmul, _split_k], ids=["matmul", "split_k"])
def test_a_long_bf16_dot_product_with_fp32_accumulation_passes(reference):
    """K = 3073 in bf16, outputs of magnitude ~55: fp32 accumulation is as close to the float64
    product as the reference is, or closer (against the split-K reference, which the former
    fixed bf16 tolerance, atol = rtol = 1e-2, failed it against on ~10 % of the elements)."""
    torch.manual_seed(0)
    a, b = torch.randn(64, 3073).bfloat16(), torch.randn(3073, 64).bfloat16()
    right = _calibrated(reference, _tile_matmul(a, b, torch.float32), a, b)
    assert right.status == "passed", right.reason
    assert (right.rule, right.against) == ("calibrated", "float64")
    assert 0 < right.ref_rel_l2 and right.rel_l2 <= right.ref_rel_l2 * 1.01
    assert right.rel_l2 <= right.bound_rel_l2 and right.max_rel_diff <= right.bound_max_rel
    assert right.bound_max_rel >= 2 * torch.finfo(torch.bfloat16).eps  # the floor: 2 ulps


def test_a_bf16_accumulator_over_a_long_k_fails():
    """The same product with the running sum rounded to bf16 at each of its 49 K steps: its
    relative L2 error is five times the reference's, past both 4x and the one-ulp floor, though
    its worst element stays within the 16x a fused kernel's extra roundings may reach."""
    torch.manual_seed(0)
    a, b = torch.randn(64, 3073).bfloat16(), torch.randn(3073, 64).bfloat16()
    wrong = _calibrated(torch.matmul, _tile_matmul(a, b, torch.bfloat16), a, b)
    assert wrong.status == "failed" and wrong.stochastic is None
    assert wrong.rel_l2 > 4 * wrong.ref_rel_l2 and wrong.max_rel_diff > 10 * wrong.ref_max_rel
    assert wrong.bound_rel_l2 == pytest.approx(torch.finfo(torch.bfloat16).eps)
    assert "relative L2" in wrong.reason and "the reference's" in wrong.reason
    torch.manual_seed(0)
    a, b = torch.randn(64, 8192).bfloat16(), torch.randn(8192, 64).bfloat16()
    longer = _calibrated(torch.matmul, _tile_matmul(a, b, torch.bfloat16), a, b)
    assert longer.status == "failed" and longer.rel_l2 > 1.5 * longer.bound_rel_l2


def test_exact_references_are_fair_to_a_kernel_that_rounds_within_the_floor():
    """A max is exact at any dtype (the reference's own error is 0): the floor, 2 ulps of the
    output dtype at each element's scale, is what a kernel may be off by."""
    torch.manual_seed(0)
    x, y = torch.randn(4096).half(), torch.randn(4096).half()
    ulp = torch.finfo(torch.float16).eps
    near = torch.maximum(x, y) * (1 + ulp * torch.randint(-1, 2, (4096,)).half())
    case = _calibrated(torch.maximum, near, x, y, dtype="float16")
    assert case.status == "passed" and case.ref_rel_l2 == 0 and case.ref_max_rel == 0
    assert case.bound_max_rel == pytest.approx(2 * ulp)
    far = torch.maximum(x, y) * (1 + 4 * ulp)
    case = _calibrated(torch.maximum, far, x, y, dtype="float16")
    assert case.status == "failed" and case.bad > 1000


def test_a_spec_tolerance_replaces_the_rule_and_integers_must_be_equal():
    ref = torch.randn(1000)
    loose = {"float32": Tolerance(atol=1e-2, rtol=0.0, rel_l2=1e-2)}
    case = CaseResult("check", [1000], "float32", "contiguous")
    compare(compare_spec(loose), case, [ref + 5e-3], [ref], "float32")
    assert (case.status, case.rule, case.ref_rel_l2) == ("passed", "stated", None)
    case = CaseResult("check", [1000], "float32", "contiguous")
    compare(compare_spec(loose), case, [ref + 2e-2], [ref], "float32")
    assert case.status == "failed" and "outside the spec's tolerance" in case.reason
    idx = torch.randint(0, 100, (1000,))
    off = idx.clone()
    off[7] += 1
    case = CaseResult("check", [1000], "float32", "contiguous")
    compare(compare_spec(), case, [off], [idx], "float32")
    assert (case.status, case.rule, case.bad) == ("failed", "exact", 1)
    assert "1 of 1000 integer elements differ" in case.reason


def test_a_wider_run_of_another_function_is_not_the_yardstick():
    """A reference that branches on its dtype: its float64 run is another function, so the
    case is measured against the reference itself, saying why."""

    def reference(x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.dtype == torch.float64 else x

    x = torch.randn(1000)
    wider = exact.run(reference, (x,))
    case = CaseResult("check", [1000], "float32", "contiguous")
    compare(_spec(), case, [x.clone()], [reference(x)], "float32", wider)
    assert case.status == "passed" and case.against == ""
    assert "float64 run is another function" in case.against_note


def test_the_wider_run_leaves_torch_random_state_and_draws_the_reference_stream():
    x = torch.randn(10_000)
    torch.manual_seed(3)
    wider = exact.run(lambda t: torch.nn.functional.dropout(t, 0.5), (x,))
    ref = torch.nn.functional.dropout(x, 0.5)  # drawn from the state the wider run started at
    assert torch.equal(wider.outputs[0] == 0, ref == 0)
    torch.manual_seed(3)
    assert torch.equal(ref == 0, torch.nn.functional.dropout(x, 0.5) == 0)


def test_float32_copies_where_float64_does_not_fit_or_is_refused(monkeypatch):
    x = torch.randn(64).half()
    monkeypatch.setattr(exact, "MAX_FLOAT64_ELEMENTS", 10)
    wide = exact.run(torch.neg, (x,))
    assert wide.precision == "float32" and "too large" in wide.why
    monkeypatch.undo()

    def no_double(t: torch.Tensor) -> torch.Tensor:
        if t.dtype == torch.float64:
            raise TypeError("float64 is not supported")
        return -t

    wide = exact.run(no_double, (x,))
    assert wide.precision == "float32" and "raised on float64" in wide.why
    wide = exact.run(no_double, (torch.randn(4),))  # float32 inputs: nothing wider to try
    assert wide.outputs is None and "raised on float64" in wide.why
    wide = exact.run(lambda n: torch.ones(n), (5,))
    assert wide.outputs is None and "no floating-point tensor" in wide.why


def test_an_output_the_reference_leaves_all_zero_is_off_by_inf_not_by_a_huge_number():
    case = _compare(torch.full((1000,), 1e-3), torch.zeros(1000))
    assert case.status == "failed" and case.max_rel_diff == math.inf


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = (q.float() @ k.float().T) / q.shape[-1] ** 0.5
    return (torch.softmax(scores, dim=-1) @ v.float()).to(q.dtype)


def test_a_fused_kernel_rounding_its_intermediates_passes_and_a_wrong_row_fails():
    """Attention that keeps its scores and probabilities in bf16 (as fused kernels do) rounds
    three times where the reference rounds once: several ulps on its worst elements, under 2x in
    L2, and right. The same output with one row of a thousand wrong fails."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1024, 64).bfloat16() for _ in range(3))
    scores = ((q.float() @ k.float().T) / 8).bfloat16().float()
    fused = (torch.softmax(scores, dim=-1).bfloat16().float() @ v.float()).bfloat16()
    case = _calibrated(_attention, fused, q, k, v)
    assert case.status == "passed", case.reason
    assert case.max_rel_diff > 4 * case.ref_max_rel  # the old 4x on the worst element failed it
    broken = fused.clone()
    broken[17] = -broken[17]
    assert _calibrated(_attention, broken, q, k, v).status == "failed"
