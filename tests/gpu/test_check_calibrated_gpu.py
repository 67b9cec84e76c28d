"""The calibrated rule on real launches: a correct bf16 matmul summing 3073 products per output
passes against cuBLAS however cuBLAS rounds, a bf16 accumulator fails at long K, and the
library's 16-bit GEMMs and attention, which no longer carry tolerances of their own, stay
correct. Run on the GPU host with `python -m pytest -m gpu tests/gpu/test_check_calibrated_gpu.py`.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, ROOT, cli

from workbench.check import verdict
from workbench.check.result import CheckReport

pytestmark = pytest.mark.gpu


def _check(name: str, path: object, *args: str) -> tuple[int, CheckReport]:
    proc = cli("check", name, "--path", str(path), "--json", *args)
    out = json.loads(proc.stdout)
    assert out["status"] == "ok" and out["result"]["mode"] == "gpu", out
    return proc.returncode, CheckReport.from_dict(out["result"])


def test_the_tutorial_matmul_at_3073_is_correct_against_float64():
    path = FIXTURES / "check_calibrated" / "tutorial_matmul_bf16.py"
    status, report = _check("tutorial_matmul_bf16", path)
    assert status == 0, [(c.shape, c.layout, c.reason) for c in report.cases]
    derived = [c for c in report.cases if c.shape_set == "derived"]
    # the case is named by its first input's cut size; both inputs are 3073 x 3073
    assert derived and all(c.inputs == [[3073, 3073], [3073, 3073]] for c in derived)
    for c in report.cases:
        assert (c.rule, c.against) == ("calibrated", "float64")
        assert c.rel_l2 <= c.bound_rel_l2 and c.max_rel_diff <= c.bound_max_rel, c


def test_a_bf16_accumulator_fails_at_long_k_and_its_twin_passes():
    status, flawed = _check("pitfall_bf16_acc", ROOT / "kernels")
    assert status == 1 and flawed.summary()["verdict"] == verdict.TREND
    longest = max((c for c in flawed.cases if c.layout == "contiguous"), key=lambda c: c.shape[2])
    assert longest.status == "failed" and longest.max_rel_diff > longest.bound_max_rel
    status, fixed = _check("pitfall_bf16_acc_fixed", ROOT / "kernels")
    assert status == 0 and fixed.correct


@pytest.mark.parametrize("name", ["matmul", "matmul_bias_gelu", "attention", "attention_causal"])
def test_the_library_16_bit_gemms_and_attention_stay_correct(name):
    status, report = _check(name, ROOT / "kernels", "--dtype", "float16", "--dtype", "bfloat16")
    assert status == 0, [(c.dtype, c.shape, c.layout, c.reason) for c in report.cases]
    assert all(c.rule == "calibrated" for c in report.cases)
