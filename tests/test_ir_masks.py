"""What the TTIR says about masks and pointers, on kernels cross-compiled here for sm_90.

An off-by-one mask (`offs <= n`, or `n >= offs`, feeding a load or store mask) is found at the
comparison's line, and `< n`, `<= n - 1`, a constant bound or a comparison that masks nothing
are left alone. The accesses that reach one pointer argument are followed through splats,
adds and loop-carried pointers, which places a guard region's finding at its store or load.
"""

from __future__ import annotations

import inspect

import pytest
import triton
import triton.language as tl
from conftest import FIXTURES
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from workbench.diagnosis.masks import off_by_one
from workbench.ir import pointers
from workbench.ir.linemap import map_mlir

pytestmark = pytest.mark.versions  # CI runs these under every Triton release

SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@triton.jit
def _le(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _ge_2d(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < 4) & (n >= cols[None, :])
    offs = rows[:, None] * n + cols[None, :]
    tl.store(y_ptr + offs, 1.0, mask=mask)


@triton.jit
def _fine(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    x = tl.load(x_ptr + offs, mask=offs <= n - 1) + x
    x = tl.load(x_ptr + offs, mask=offs <= 63) + x
    x = tl.where(offs <= n, x, 0.0)  # a select, not a mask
    tl.store(y_ptr + offs, x, mask=offs < n)


@triton.jit
def _two_stores(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = y_ptr + offs
    for i in range(0, n, BLOCK):
        x = tl.load(x_ptr + i + offs, mask=i + offs < n)
        tl.store(ptrs, x, mask=i + offs < n)
        ptrs += BLOCK
    tl.store(y_ptr, 0.0)


def _ttir(fn) -> str:
    src = ASTSource(fn, SIG, {"BLOCK": 64})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ttir"]


def _line(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_offs_le_n_in_a_load_and_store_mask_is_found_at_the_comparison():
    ttir = _ttir(_le)
    (f,) = off_by_one(ttir, map_mlir(ttir), "BLOCK=64")
    assert (f.id, f.severity, f.line) == ("off-by-one-mask", "medium", _line(_le, "offs <= n"))
    assert f.evidence["ops"] == ["load", "store"] and "tl.load and tl.store" in f.title
    assert f"line {f.line}" in f.fix and "< n, not <= n" in f.fix


def test_n_ge_offs_anded_into_a_2d_mask_is_found_too():
    ttir = _ttir(_ge_2d)
    (f,) = off_by_one(ttir, map_mlir(ttir), "BLOCK=64")
    assert f.line == _line(_ge_2d, "n >= cols") and f.evidence["ops"] == ["store"]


def test_lt_minus_one_constants_and_selects_are_left_alone():
    ttir = _ttir(_fine)
    assert "arith.cmpi sle" in ttir  # the comparisons are there; none is an off-by-one mask
    assert off_by_one(ttir, map_mlir(ttir), "BLOCK=64") == []


def test_the_accesses_reaching_a_pointer_follow_it_through_a_loop():
    ttir = _ttir(_two_stores)
    assert len(pointers.pointer_args(ttir)) == 2
    stores = pointers.accesses(ttir, 1)  # y_ptr: the second pointer argument
    lines = {(a.op, a.where[1], a.masked) for a in stores}
    assert lines == {
        ("store", _line(_two_stores, "tl.store(ptrs"), True),
        ("store", _line(_two_stores, "tl.store(y_ptr"), False),
    }
    line, candidates = pointers.access_line(ttir, 1, pointers.WRITES)
    assert line[1] == _line(_two_stores, "tl.store(ptrs") and len(candidates) == 2
    (load,) = pointers.accesses(ttir, 0)  # x_ptr is only read
    assert load.op == "load" and pointers.access_line(ttir, 0, pointers.WRITES) == (None, [])


def test_pointer_arguments_are_read_from_the_signature_of_34_and_39_alike():
    """Triton 3.4 names arguments %arg0..., 3.9 after the Python parameters."""
    for version, names in (("34", ["%arg0", "%arg1", "%arg2", "%arg3"]),
                           ("39", ["%a_ptr", "%b_ptr", "%c_ptr", "%sum_ptr"])):  # fmt: skip
        ttir = (FIXTURES / f"ir_flawed_{version}.ttir").read_text()
        assert pointers.pointer_args(ttir) == names
        found = [[(a.op, a.where[1]) for a in pointers.accesses(ttir, i)] for i in range(4)]
        # ir_small.py: a and b loaded (32, 33), c stored (35), sum_ptr atomically added (38)
        assert found == [[("load", 32)], [("load", 33)], [("store", 35)], [("atomic_rmw", 38)]]
