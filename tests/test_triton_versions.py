"""What the workbench asks of each Triton it supports (3.4 to 3.9), on this CPU machine.

CI runs every test marked `versions` once per Triton release, each in a virtual environment
of its own (.ci/run); these are the ones where releases differ: interpreted launches seen by
a wrapper of `run`, loops with a runtime bound, compiling after interpreting in one process,
a builtin's compile error, and the autotuner as the sweep reads it.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from workbench.check import launches
from workbench.ir.capture import Launch
from workbench.run.faults import problem_from_exception
from workbench.runtime import compat
from workbench.sweep import job

pytestmark = pytest.mark.versions
compat.fix_interpreter()  # what the worker does before it interprets anything


def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def _total(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # builtins only: tl.zeros is a @jit helper, compiled here
    acc = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    for start in range(BLOCK, n, BLOCK):  # a runtime bound: the interpreter takes its __index__
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
    tl.store(y_ptr + offs, acc)


def _jit(fn, interpreted: bool):
    """`fn` as @triton.jit makes it with TRITON_INTERPRET on or off (read when it decorates)."""
    with compat.interpreter(interpreted):
        return triton.jit(fn)


def _keep_big(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] >= 64]


def test_interpreted_launches_are_seen_by_a_wrapper_of_run():
    kernel = _jit(_scale, interpreted=True)
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros_like(x)
    seen: list[dict] = []
    with launches.recorded(seen):
        kernel[(4,)](x, y, 100, BLOCK=32)
    assert torch.equal(y, 2 * x)
    assert seen == [{"kernel": "_scale", "grid": [4], "constexprs": {"BLOCK": 32}}]


def test_a_loop_with_a_runtime_bound_runs_in_the_interpreter():
    kernel = _jit(_total, interpreted=True)
    x = torch.rand(1000)
    y = torch.zeros(64)
    kernel[(1,)](x, y, 1000, BLOCK=64)
    assert torch.allclose(y.sum(), x.sum(), rtol=1e-5)


def test_a_kernel_compiles_after_an_interpreted_launch_in_the_same_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # compiled here, not read back
    x = torch.ones(64)
    _jit(_scale, interpreted=True)[(1,)](x, torch.empty_like(x), 64, BLOCK=64)
    compiled = compat.cross_compile(_jit(_scale, interpreted=False), 90, (x, x, 64), {"BLOCK": 64})
    assert "tt.func" in compiled.asm["ttir"] and ".target sm_90" in compiled.asm["ptx"]
    assert compiled.asm["cubin"][:4] == b"\x7fELF"


def test_a_builtins_compile_error_is_named_in_the_problem():
    x = torch.ones(128)
    fn = _jit(_scale, interpreted=False)
    with pytest.raises(Exception) as caught:
        compat.cross_compile(fn, 90, (x, x, 128), {"BLOCK": 96})
    problem = problem_from_exception(caught.value)
    assert problem.kind == "compile-error"
    assert problem.cause.endswith("arange's range must be a power of 2"), problem.cause
    assert problem.file == __file__ and problem.line == _scale.__code__.co_firstlineno + 1


def test_the_autotuner_reads_as_the_sweep_reads_it():
    configs = [
        triton.Config({"BLOCK": 32}, num_warps=1),
        triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK": 256}, num_warps=8, maxnreg=128),
    ]
    fn = _jit(_scale, interpreted=False)
    tuner = triton.autotune(configs, key=["n"], prune_configs_by={"early_config_prune": _keep_big})(
        fn
    )
    globals()["_tuned_scale"] = tuner  # where the sweep looks: the function's module
    try:
        assert job._autotuner(fn) is tuner and compat.base_function(tuner) is fn
    finally:
        del globals()["_tuned_scale"]
    x = torch.ones(512)
    base = Launch(fn, (x, x, 512), {}, tuned=True)
    values = job._configs("own", tuner, base)
    assert values == [
        {"BLOCK": 32, "num_warps": 1, "num_stages": 3},
        {"BLOCK": 128, "num_warps": 4, "num_stages": 2},
        {"BLOCK": 256, "num_warps": 8, "num_stages": 3, "maxnreg": 128},
    ]
    dropped, note = job._tuner_prunes(tuner, base, values, own=True)
    assert note == "" and list(dropped) == ["BLOCK=32,num_warps=1,num_stages=3"]
    with compat.pinned(tuner, {"BLOCK": 64}, {"num_warps": 2}):
        assert [c.all_kwargs() for c in tuner.configs] == [
            {"BLOCK": 64, "num_warps": 2, "num_ctas": 1, "num_stages": 3}
        ]
    assert len(tuner.configs) == 3


def test_an_interpreted_autotuner_runs_its_first_config_alone():
    configs = [triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64})]
    tuner = triton.autotune(configs, key=["n"])(_jit(_scale, interpreted=True))
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros_like(x)
    seen: list[dict] = []
    with compat.first_config_only([tuner]) as pinned, launches.recorded(seen):
        tuner[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, 100)
    [note] = pinned  # str(Config): 3.9 adds ir_override
    assert note.startswith("_scale: BLOCK: 32, num_warps: 1, num_ctas: 1, num_stages: 3")
    assert torch.equal(y, 2 * x) and len(tuner.configs) == 2
    assert seen == [{"kernel": "_scale", "grid": [4], "constexprs": {"BLOCK": 32}}]
