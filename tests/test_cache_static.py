"""Findings 3 (names in key/reset_to_zero/restore_value that are not arguments) and 5 (what the
keys do not see), each with a twin where it stays silent."""

from __future__ import annotations

from workbench.cache import static

SOURCE = """
import triton
import triton.language as tl

SCALE = tl.constexpr(2)


@triton.autotune(configs=[], key=[{key}], reset_to_zero=["out_ptr"])
@triton.jit
def kern(x_ptr, out_ptr, M, N, stride_m, BLOCK: tl.constexpr):
    tl.store(out_ptr, tl.load(x_ptr) * {use})


plain = triton.autotune(configs=[], key=[{key}])(kern)
"""


def ids(key: str, version: str = "3.6.0", use: str = "1") -> list[str]:
    src = SOURCE.format(key=key, use=use)
    return [f.id for f in static.findings(src, "k.py", version)]


def test_unknown_key_names_fire_in_both_decorator_forms():
    found = static.findings(SOURCE.format(key='"M", "n"', use="1"), "k.py", "3.6.0")
    unknown = [f for f in found if f.id == "autotune-unknown-name"]
    assert len(unknown) == 2 and "drops them silently" in unknown[0].evidence["detail"]
    assert "N" in unknown[0].fix  # the closest argument name
    assert (
        "ValueError"
        in static.findings(SOURCE.format(key='"n"', use="1"), "k.py", "3.9.0")[0].evidence["detail"]
    )


def test_known_names_are_silent():
    assert "autotune-unknown-name" not in ids('"M", "N", "stride_m"')


def test_non_key_runtime_arguments():
    assert ids('"M", "N"').count("autotune-non-key-args") == 2  # stride_m, both forms
    assert "autotune-non-key-args" not in ids('"M", "N", "stride_m"')


def test_global_constexpr_only_before_3_5():
    assert "global-constexpr-not-in-key" in ids('"M"', "3.4.0", use="SCALE")
    assert "global-constexpr-not-in-key" not in ids('"M"', "3.5.1", use="SCALE")
    assert "global-constexpr-not-in-key" not in ids('"M"', "3.4.0", use="1")


LOOPED = """
import triton
import triton.language as tl


@triton.autotune(configs=CONFIGS, key=[{key}])
@triton.jit
def mm(a_ptr, c_ptr, M, N, K, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    {loop}
        tl.store(c_ptr, tl.load(a_ptr))
"""
REDUCTION = "for k in range(0, tl.cdiv(K, BLOCK_K)):"


def loop_findings(key: str, loop: str = REDUCTION) -> list[dict]:
    src = LOOPED.format(key=key, loop=loop)
    return [f for f in static.findings(src, "k.py", "3.6.0") if f.id.startswith("autotune")]


def test_a_key_without_the_reduction_length_is_a_warning_once():
    (found,) = loop_findings('"M", "N"')
    assert found.id == "autotune-key-misses-loop-bound" and found.severity == "medium"
    assert "K" in found.title and "add K to key=" in found.fix
    assert loop_findings('"M", "N", "K"') == []


def test_the_loop_length_is_followed_through_assignments_and_steps():
    stepped = "for k in tl.range(0, K, BLOCK_K):"
    assert [f.id for f in loop_findings('"M"', stepped)] == [
        "autotune-key-misses-loop-bound",
        "autotune-non-key-args",  # N: passed, in no loop
    ]
    assigned = "n_k = K // BLOCK_K\n    for k in range(n_k):"
    assert "K" in loop_findings('"M", "N"', assigned)[0].title


def test_loops_a_config_does_not_tile_are_silent():
    def loop_ids(key: str, loop: str = REDUCTION) -> set[str]:
        return {f.id for f in loop_findings(key, loop)} - {"autotune-non-key-args"}

    # the block is a key argument the launcher passes (a power-of-two bucket of the length)
    assert loop_ids('"M", "N", "BLOCK_K"') == set()
    # a grid-stride loop over rows: its length is rows per program, not a tile
    rows = "for r in tl.range(tl.program_id(0), M, tl.num_programs(0)):"
    assert loop_ids('"N", "K"', rows) == set()
    # a plain count with no block in it
    assert loop_ids('"M", "N"', "for k in range(K):") == set()
