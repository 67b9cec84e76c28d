"""The check's facts on a GPU: NaN payloads through real loads and stores (bf16 too, which the
interpreter cannot run), the verdicts of the flawed kernels in real launches, and the byte
model that gives a three-name module its roofline. Run on the GPU host with
`python -m pytest -m gpu`; skipped elsewhere.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import FIXTURES, ROOT, cli

from workbench.check import verdict
from workbench.check.result import CheckReport
from workbench.runtime import tensors

pytestmark = pytest.mark.gpu

FLAWED = FIXTURES / "check_facts"
BROKEN = ROOT / "tests" / "helpers" / "broken_kernels.py"


def _check(name: str, path: object, *args: str) -> CheckReport:
    proc = cli("check", name, "--path", str(path), "--json", *args)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["status"] == "ok" and out["result"]["mode"] == "gpu", out
    return CheckReport.from_dict(out["result"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_payloads_read_back_from_gpu_memory(dtype):
    for payload in (tensors.UNWRITTEN, tensors.PADDING):
        t = tensors.fill_nan(torch.empty(1000, dtype=dtype, device="cuda"), payload)
        assert torch.isnan(t).all() and (tensors.nan_payload(t) == payload).all()


def test_a_copy_that_ignores_strides_carries_the_padding_payload_in_every_dtype():
    report = _check("copy_ignores_strides", FLAWED)
    strided = [c for c in report.cases if c.layout == "strided"]
    assert {c.dtype for c in strided} == {"float32", "float16", "bfloat16"}
    for c in strided:  # loads and stores move bits: half the elements are the gaps' NaN
        assert c.status == "failed" and c.read_padding == c.numel // 2, c
    assert report.summary()["verdict"] == verdict.STRIDES


@pytest.mark.parametrize(
    "name, path, expected",
    [
        ("dropout_own_rng", FLAWED, verdict.STREAM),
        ("dropout_unscaled", FLAWED, verdict.SCALE),
        ("dropout_keeps_p", FLAWED, verdict.KEEP_RATE),
        ("softmax_no_max", FLAWED, verdict.NONFINITE),
        ("mean_over_block", FLAWED, verdict.IRREGULAR),
        ("sum_fp16_acc", FLAWED, verdict.TREND),
        ("tail_three_name", FLAWED / "tail_three_name.py", verdict.TAIL),
        ("hardcoded_three_name", FLAWED / "hardcoded_three_name.py", verdict.CORRECT),
        ("scale_ignores_strides", BROKEN, verdict.STRIDES),
        ("gelu_dropout", ROOT / "kernels", verdict.CORRECT),
    ],
)
def test_each_flaw_gets_its_verdict_on_the_gpu(name, path, expected):
    report = _check(name, path)
    assert report.summary()["verdict"] == expected, [
        (c.dtype, c.shape, c.layout, c.reason) for c in report.cases if c.status != "passed"
    ]
    if name == "gelu_dropout":  # the shipped dropout reproduces its reference's stream
        assert all(c.stochastic is None for c in report.cases)


def test_three_name_bench_has_a_byte_model_and_so_a_roofline():
    proc = cli("bench", "gelu_three_name", "--json")
    records = json.loads(proc.stdout)["result"]["records"]
    assert proc.returncode == 0 and records, proc.stderr[-3000:]
    rec = records[0]
    assert rec["status"] == "ok" and rec["bytes"] == 2 * 4 * (1 << 20), rec
    assert rec["gbps"] > 0 and rec["roofline_ratio"] is not None and rec["bound"] == "memory"
