"""Static findings on real TTIR of tests/fixtures/ir_kernels/ir_small.py's `_flawed` (Triton 3.9
for sm_90 and 3.4 for sm_80) and on kernel and wrapper source."""

from __future__ import annotations

import ast

import pytest
from conftest import FIXTURES

from workbench.diagnosis.finding import Finding
from workbench.diagnosis.static import (
    constexpr_findings,
    drop_guarded,
    host_sync_findings,
    ir_findings,
    merge,
)
from workbench.ir.facts import irregular_shapes
from workbench.ir.linemap import map_mlir

pytestmark = pytest.mark.versions  # CI runs these under every Triton release

SOURCE = FIXTURES / "ir_kernels" / "ir_small.py"
LOAD_A, LOAD_B, FP16_DOT, STORE, IEEE_DOT, ATOMIC = 32, 33, 34, 35, 36, 38


@pytest.mark.parametrize("version", ["39", "34"])
def test_ttir_patterns_point_at_their_lines(version):
    ttir = (FIXTURES / f"ir_flawed_{version}.ttir").read_text()
    found = ir_findings(ttir, map_mlir(ttir), "TILE=16", irregular=[(15, 15)])
    where = {(f.id, f.line) for f in found}
    assert where == {
        ("accumulating-low-precision", FP16_DOT),
        ("fp32-dot-ieee", IEEE_DOT),
        ("reduction-across-blocks", ATOMIC),
        ("no-boundary-mask", LOAD_A),
        ("no-boundary-mask", LOAD_B),
        ("no-boundary-mask", STORE),
    }
    assert all(f.file and f.file.endswith("ir_small.py") for f in found)
    lines = SOURCE.read_text().splitlines()
    assert "out_dtype=tl.float16" in lines[FP16_DOT - 1]
    assert 'input_precision="ieee"' in lines[IEEE_DOT - 1]
    assert "atomic_add" in lines[ATOMIC - 1]


def test_unmasked_access_needs_irregular_shapes():
    ttir = (FIXTURES / "ir_flawed_39.ttir").read_text()
    found = ir_findings(ttir, map_mlir(ttir), "TILE=16", irregular=[])
    assert "no-boundary-mask" not in {f.id for f in found}


def test_masked_kernel_and_tf32_dot_are_clean():
    ttir = (FIXTURES / "ir_softmax_39.ttir").read_text()
    assert ir_findings(ttir, map_mlir(ttir), "BLOCK=64", irregular=[(3, 1000)]) == []
    line = (
        "%d = tt.dot %a, %b, %c, inputPrecision = tf32 : tensor<16x16xf32> * "
        "tensor<16x16xf32> -> tensor<16x16xf32> loc(#loc1)"
    )
    # the default tf32 dot is a fact worth knowing (its ~1e-3 error), not a problem
    (tf32,) = ir_findings(line, map_mlir(line), "", [])
    assert (tf32.id, tf32.severity) == ("tf32-mismatch", "info")


def test_irregular_shapes():
    shapes = [(4096,), (64, 1024), (1000,), (300, 256)]
    assert irregular_shapes(shapes) == [(1000,), (300, 256)]
    assert irregular_shapes(shapes, block=64) == [(1000,), (300, 256)]
    assert irregular_shapes(shapes, block=256) == [(64, 1024), (1000,), (300, 256)]
    assert irregular_shapes([(1024, 512)], block=1024) == [(1024, 512)]


def test_tile_sizes_not_constexpr():
    source, start = _function_source("_flawed")
    found = constexpr_findings(source, str(SOURCE), start)
    assert [(f.id, f.evidence["parameter"], f.line) for f in found] == [
        ("forgot-constexpr", "BLOCK_STEP", 30)
    ]
    ok = "@triton.jit\ndef k(x, n, BLOCK_M: tl.constexpr, M, GROUP_M: 'tl.constexpr'):\n  pass\n"
    assert constexpr_findings(ok, "k.py", 1) == []
    # pointers and offsets named after tiles (Liger's grouped GEMM) are not tile sizes
    args = "tile_row_start_ptr, tile_expert_ptr, block_start, stride_block, BLOCK_N"
    named = f"@triton.jit\ndef k({args}):\n  pass\n"
    assert [f.evidence["parameter"] for f in constexpr_findings(named, "k.py", 1)] == ["BLOCK_N"]


def test_host_syncs_in_the_wrapper():
    source = "def wrapper(x):\n    n = int(x.sum().item())\n    y = x.cpu()\n    return y\n"
    found = host_sync_findings([(source, "w.py", 10)])
    assert [(f.evidence["call"], f.line) for f in found] == [
        ("x.sum().item()", 11),
        ("x.cpu()", 12),
    ]
    assert host_sync_findings([("def f(x):\n    return x.sum()\n", "w.py", 1)]) == []


def test_merge_gathers_configs_but_keeps_resource_findings_apart():
    def f(id_: str, config: str, line: int) -> Finding:
        return Finding(id_, "t", "medium", {"config": config}, "fix", "k.py", line)

    merged = merge(
        [
            f("no-boundary-mask", "A", 5),
            f("no-boundary-mask", "B", 5),
            f("register-spill", "A", 1),
            f("register-spill", "B", 1),
        ]
    )
    assert [m.id for m in merged] == ["no-boundary-mask", "register-spill", "register-spill"]
    assert merged[0].evidence["configs"] == ["A", "B"]
    again = Finding.from_dict(merged[0].to_dict())
    assert again == merged[0] and again.evidence == merged[0].evidence


SPLIT_LOOP = """\
@triton.jit
def k(x_ptr, y_ptr, n, full, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for start in range(0, full, BLOCK):
        x = tl.load(x_ptr + start + offs)
        tl.store(y_ptr + start + offs, x)
    start = full
    x = tl.load(x_ptr + start + offs, mask=start + offs < n)
    y = tl.load(y_ptr + offs)
"""


def test_an_unmasked_access_with_a_masked_twin_is_the_split_loop():
    def f(line: int) -> Finding:
        return Finding("no-boundary-mask", "t", "medium", {}, "fix", "k.py", line)

    kept = drop_guarded([f(5), f(6), f(9)], {"k.py": SPLIT_LOOP}.__getitem__)
    # The full-tile load has a masked twin; the store and the last load do not.
    assert [k.line for k in kept] == [6, 9]
    assert drop_guarded([f(5)], lambda _: (_ for _ in ()).throw(OSError("gone"))) == [f(5)]


def _function_source(name: str) -> tuple[str, int]:
    """A function's source with its decorators, and the line it starts at."""
    text = SOURCE.read_text()
    node = next(
        n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name
    )
    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    return "\n".join(text.splitlines()[start - 1 : node.end_lineno]), start


TWINS = """\
@triton.jit
def flawed(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def fixed(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def test_a_masked_twin_in_another_function_guards_nothing():
    found = Finding("no-boundary-mask", "t", "medium", {}, "fix", "k.py", 4)
    assert drop_guarded([found], {"k.py": TWINS}.__getitem__) == [found]
