"""Seed 002's error rows on Triton's real messages: each error is made to happen here, by tiny
broken kernels in the interpreter or cross-compiled for sm_90, turned into the check's Problem by
the worker's own `problem_from_exception`, and mapped to its row."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from workbench.check.result import CaseResult, CheckReport
from workbench.diagnosis import Facts
from workbench.diagnosis.errors import check_errors, classify
from workbench.diagnosis.pitfalls import fix_text
from workbench.run.faults import problem_from_exception

pytestmark = pytest.mark.versions  # CI runs these under every Triton release


def _cross_compile(fn, signature: dict, constexprs: dict) -> None:
    triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32))


def _problem(make) -> dict:
    with pytest.raises(Exception) as caught:
        make()
    return problem_from_exception(caught.value).to_dict()


@triton.jit
def _arange_not_pow2(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def _shapes_disagree(x_ptr, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, BLOCK * 2)
    tl.store(x_ptr + a, a + b)


@triton.jit
def _exp_of_fp16(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


@triton.jit
def _store_pointer_as_value(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, x_ptr + offs)


CROSS = {
    "arange-constexpr": (_arange_not_pow2, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, 100),
    "shape-mismatch": (_shapes_disagree, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, 16),
    "math-needs-fp32": (_exp_of_fp16, {"x_ptr": "*fp16", "BLOCK": "constexpr"}, 64),
    "store-type-mismatch": (
        _store_pointer_as_value,
        {"x_ptr": "*fp32", "y_ptr": "*fp16", "BLOCK": "constexpr"},
        64,
    ),
}


@pytest.mark.parametrize("row", sorted(CROSS))
def test_compile_errors_map_to_their_rows(row: str):
    fn, signature, block = CROSS[row]
    problem = _problem(lambda: _cross_compile(fn, signature, {"BLOCK": block}))
    assert problem["kind"] == "compile-error"
    assert classify(problem) == row, problem["cause"]


def test_interpreter_errors_map_to_their_rows(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")

    @triton.jit
    def runtime_block(x_ptr, n, BLOCK):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, 1.0, mask=offs < n)

    @triton.jit
    def fill(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, 1.0, mask=offs < n)

    x = torch.zeros(64)
    arange = _problem(lambda: runtime_block[(1,)](x, 64, 64))
    assert "arange's arguments must be of type tl.constexpr" in arange["cause"]
    assert classify(arange) == "arange-constexpr"
    grid = _problem(lambda: fill[4](x, 64, BLOCK=16))  # a grid of int, not (4,)
    assert classify(grid) == "grid-not-tuple", grid["cause"]
    lam = _problem(lambda: fill[lambda meta: 4](x, 64, BLOCK=16))
    assert classify(lam) == "grid-not-tuple"


def test_out_of_resources_and_unknown_errors():
    from triton.runtime.errors import OutOfResources

    oor = problem_from_exception(OutOfResources(300_000, 232_448, "shared memory")).to_dict()
    assert "out of resource: shared memory" in oor["cause"]
    assert classify(oor) == "out-of-resources"
    other = problem_from_exception(ZeroDivisionError("division by zero")).to_dict()
    assert classify(other) == "check-error"


def test_errored_cases_become_one_finding_per_row_with_its_fix():
    arange = _problem(lambda: _cross_compile(*CROSS["arange-constexpr"][:2], {"BLOCK": 100}))
    other = problem_from_exception(ZeroDivisionError("division by zero")).to_dict()
    cases = [
        CaseResult("regular", [64], "float32", "contiguous", "error", problem=arange),
        CaseResult("regular", [96], "float32", "contiguous", "error", problem=arange),
        CaseResult("regular", [64], "float16", "contiguous", "error", problem=other),
        CaseResult("regular", [64], "bfloat16", "contiguous", "passed"),
    ]
    found = {f.id: f for f in check_errors(Facts("k", check=CheckReport("k", "cpu", "x", cases)))}
    assert set(found) == {"arange-constexpr", "check-error"}
    row = found["arange-constexpr"]
    assert row.severity == "high" and row.evidence["cases"] == 2
    assert row.fix == fix_text("arange-constexpr")
    assert row.file and row.file.endswith("test_diagnosis_errors.py") and row.line
    assert found["check-error"].fix == other["remedy"]  # the check's own remedy, unmapped
    clean = [CaseResult("regular", [64], "float32", "contiguous", "passed")]
    assert check_errors(Facts("k", check=CheckReport("k", "cpu", "x", clean))) == []
