"""The comparison at the heart of `check`, on hand-made outputs (pure torch, no kernels)."""

from __future__ import annotations

import pytest
import torch

from workbench.catalog.spec import KernelSpec
from workbench.check import compare as comparison
from workbench.check.compare import boundary_block, compare
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


def test_boundary_block_two_dims():
    # errors in the last 3 rows of a 35-row matrix: the partial tail of 16-row tiles
    flat = torch.tensor([32 * 48 + 5, 34 * 48 + 47])
    assert boundary_block(flat, (35, 48)) == 16
    assert boundary_block(torch.tensor([40 * 48]), (50, 48)) == 32  # rows 32..49 of 32-row tiles
    assert boundary_block(torch.tensor([3 * 48]), (35, 48)) is None


def test_bitwise_equal_reads_a_one_element_strided_view():
    view = torch.zeros(1, 2)[:, ::2]  # (1, 1) with stride 2: .contiguous() keeps that stride
    assert tensors.bitwise_equal(view, view.clone())
    assert not tensors.bitwise_equal(view, view + 1)
