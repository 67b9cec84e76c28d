"""The memory-bound kernels (element-wise, softmax, norms, dropout fusions) and the transformer.

Every check runs the check job as the worker runs it on this CPU-only machine, under
TRITON_INTERPRET=1 (two child processes share the kernels): fp32 and fp16 must pass every shape
in both layouts, bf16 is reported as skipped. Deliberately wrong kernels (tests/helpers) show
that the same check catches a missing tail tile and ignored strides. The dropout stream's own
properties run in one interpreter subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, interpreter_checks

SPECS = (
    "vector_add",
    "gelu",
    "gelu_tanh",
    "gelu_dropout",
    "gelu_three_name",
    "softmax",
    "softmax_online",
    "layer_norm",
    "rms_norm",
    "add_dropout_layer_norm",
    "transformer",
)
DTYPES = ["float32", "float16", "bfloat16"]
BROKEN = ROOT / "tests" / "helpers" / "broken_kernels.py"
BROKEN_NAMES = ("scale_floor_grid", "scale_ignores_strides")


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    todo = [(ROOT / "kernels", name, {"dtypes": DTYPES}) for name in SPECS]
    todo += [(BROKEN, name, {"dtypes": DTYPES[:2]}) for name in BROKEN_NAMES]
    return interpreter_checks(todo[0::2], todo[1::2])


@pytest.mark.parametrize("name", SPECS)
def test_check_passes_in_the_interpreter(results, name):
    result = results[name]
    assert result["correct"] is True
    cases = result["cases"]
    ran = [c for c in cases if c["dtype"] in ("float32", "float16")]
    assert ran and all(c["status"] == "passed" for c in ran), [
        (c["dtype"], c["shape"], c["layout"], c["reason"]) for c in ran if c["status"] != "passed"
    ]
    assert {c["dtype"] for c in ran} == {"float32", "float16"}
    assert all(c["unwritten"] == 0 for c in ran)
    assert all(c["deterministic"] for c in ran if c["layout"] == "contiguous")
    bf16 = [c for c in cases if c["dtype"] == "bfloat16"]
    assert bf16 and all(c["status"] == "skipped" and "interpreter" in c["reason"] for c in bf16)


@pytest.mark.parametrize("name", [n for n in SPECS if n not in ("gelu_three_name", "transformer")])
def test_kernels_are_checked_on_strided_inputs_and_irregular_sizes(results, name):
    ran = [c for c in results[name]["cases"] if c["status"] == "passed"]
    assert {c["layout"] for c in ran} == {"contiguous", "strided"}
    last_dims = {c["shape"][-1] for c in ran}
    assert any(d & (d - 1) for d in last_dims), "no size that is not a power of two"
    assert 1 in last_dims, "no single-element rows"


def test_three_name_module_runs_on_the_inputs_it_makes(results):
    cases = results["gelu_three_name"]["cases"]
    assert {c["shape_set"] for c in cases} == {"check", "derived"}
    assert all(c["numel"] == 1 << 20 for c in cases if c["status"] == "passed" and not c["shape"])
    derived = [c for c in cases if c["shape_set"] == "derived"]
    # get_inputs()'s 2^20 cut to an irregular size, and the kernel's mask covers it
    assert all(c["shape"] == [(1 << 20) * 3 // 4 + 1] for c in derived)
    ran = [c for c in derived if c["status"] != "skipped"]  # bf16 is skipped in the interpreter
    assert ran and all(c["status"] == "passed" for c in ran), [c["reason"] for c in ran]


def test_missing_tail_tile_is_caught_at_the_boundary(results):
    result = results["scale_floor_grid"]
    assert result["correct"] is False
    by_shape = {(tuple(c["shape"]), c["dtype"], c["layout"]): c for c in result["cases"]}
    for dtype in ("float32", "float16"):
        for layout in ("contiguous", "strided"):
            assert by_shape[((1024,), dtype, layout)]["status"] == "passed"  # BLOCK divides n
            tail = by_shape[((1000,), dtype, layout)]
            assert tail["status"] == "failed" and tail["boundary_only"] is True
            assert tail["boundary_block"] == 256 and tail["unwritten"] == 1000 - 768
    assert result["summary"]["boundary_only_errors"] is True


def test_ignored_strides_fail_only_on_strided_inputs(results):
    result = results["scale_ignores_strides"]
    assert result["correct"] is False
    for c in result["cases"]:
        assert c["status"] == ("failed" if c["layout"] == "strided" else "passed"), c
    assert result["summary"]["stride_only_errors"] is True


def test_dropout_stream_and_bad_arguments():
    """Keep rate, seed dependence, the fused kernels applying exactly keep_mask's stream, and
    bad arguments answered with a cause and a remedy."""
    code = textwrap.dedent(
        """
        import json, torch
        from kernels import _dropout as D, gelu as G, norms as N, softmax as S
        from workbench.runtime.errors import WorkbenchError
        torch.manual_seed(0)
        out = {}
        s1, s2 = torch.tensor([1234]), torch.tensor([1235])
        m = D.keep_mask(s1, 8, 6000, 0.3)
        out["rate"] = m.float().mean().item()
        out["same"] = bool(torch.equal(m, D.keep_mask(s1, 8, 6000, 0.3)))
        out["other_seed_agree"] = (m == D.keep_mask(s2, 8, 6000, 0.3)).float().mean().item()
        out["p0_all"] = bool(D.keep_mask(s1, 3, 777, 0.0).all())
        x = torch.rand(5, 999) + 0.5  # GELU(x) > 0: a zero output means dropped
        y = G.gelu_dropout(x, 0.25, s1)
        keep = D.keep_mask(s1, 1, x.numel(), 0.25).view(5, 999)
        out["gelu_mask"] = bool(torch.equal(y != 0, keep))
        w, b = torch.ones(999), torch.zeros(999)
        _, h = N.add_dropout_layer_norm(x, torch.zeros_like(x), w, b, 0.25, s2)
        out["ln_mask"] = bool(torch.equal(h != 0, D.keep_mask(s2, 5, 999, 0.25)))
        bad = {
            "p1": lambda: G.gelu_dropout(x, 1.0, s1),
            "form": lambda: G.gelu(x, "exact"),
            "bias": lambda: N.layer_norm(x, w, torch.zeros(998)),
            "residual": lambda: N.add_dropout_layer_norm(x, x[:4], w, b),
            "0-d": lambda: S.softmax(torch.tensor(1.0)),
        }
        for name, call in bad.items():
            try:
                call()
            except WorkbenchError as exc:
                out[name] = [exc.problem.kind, exc.problem.cause, exc.problem.remedy]
        print(json.dumps(out))
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert abs(out["rate"] - 0.7) < 5 * (0.21 / 48000) ** 0.5  # 5 sigma of 48000 draws
    assert out["same"] and out["p0_all"]
    assert 0.5 < out["other_seed_agree"] < 0.65  # independent masks agree on 0.7^2 + 0.3^2
    assert out["gelu_mask"] and out["ln_mask"]
    for name in ("p1", "form", "bias", "residual", "0-d"):
        kind, cause, remedy = out[name]  # a clear message, not a crash inside the kernel
        assert kind == "bad-argument" and cause and remedy, name
    assert "998" in out["bias"][1] and "[0, 1)" in out["p1"][1]
