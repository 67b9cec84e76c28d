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
    return [f["id"] for f in static.findings(src, "k.py", version)]


def test_unknown_key_names_fire_in_both_decorator_forms():
    found = static.findings(SOURCE.format(key='"M", "n"', use="1"), "k.py", "3.6.0")
    unknown = [f for f in found if f["id"] == "autotune-unknown-name"]
    assert len(unknown) == 2 and "drops them silently" in unknown[0]["evidence"]
    assert "N" in unknown[0]["fix"]  # the closest argument name
    assert (
        "ValueError"
        in static.findings(SOURCE.format(key='"n"', use="1"), "k.py", "3.9.0")[0]["evidence"]
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
