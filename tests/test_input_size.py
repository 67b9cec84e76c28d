"""Inputs larger than the memory they would go to are refused before anything is allocated.

A case's inputs are first made on the meta device (shapes, no memory) and weighed against the
free GPU memory or, in interpreter mode, the host's MemAvailable: a huge --shape, or a
get_inputs() asking for terabytes, ends in a message naming the size and the remedy,
never in the allocator's error or the kernel OOM killer.
"""

from __future__ import annotations

import textwrap
import time

import pytest
import torch
from conftest import cli, cpu_env

from workbench.runtime import tensors
from workbench.runtime.errors import WorkbenchError

HUGE_THREE_NAME = '''
"""Adds a vector of half a trillion elements to a small one."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=m), mask=m)


def kernel_fn(x, y):
    out = torch.empty_like(x)
    _add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


def reference_fn(x, y):
    return x + y


def get_inputs():
    return torch.randn(500_000_000_000, device="cuda"), torch.randn(10, device="cuda")
'''


def test_a_huge_shape_is_refused_with_its_size_before_allocating(tmp_path):
    start = time.monotonic()
    proc = cli("ir", "vector_add", "--shape", "1000000000000", env=cpu_env(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "the inputs of shape (1000000000000,) float32 need 8.0 TB" in proc.stderr
    assert "available on this host (MemAvailable)" in proc.stderr
    assert "--shape" in proc.stderr and "Traceback" not in proc.stderr
    assert time.monotonic() - start < 120


def test_a_get_inputs_asking_for_terabytes_is_refused_case_by_case(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "huge_add.py").write_text(textwrap.dedent(HUGE_THREE_NAME))
    env = cpu_env(tmp_path / "reports")
    proc = cli("check", "huge_add", "--path", str(tmp_path / "kernels"), env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert "case error (usage): the inputs of get_inputs() need 4.0 TB" in said
    assert "pick a smaller shape" in said and "Traceback" not in said


def test_sizes_are_weighed_on_the_meta_device_without_touching_the_random_stream():
    torch.manual_seed(0)
    before = torch.randn(3)
    torch.manual_seed(0)

    def make(device):
        return (torch.randn(1000, 1000, device=device), [torch.empty(10, dtype=torch.int64)], 3)

    assert tensors.measured_on_meta(make) == 4_000_000 + 80
    assert torch.equal(torch.randn(3), before)


def test_an_allocator_that_gives_out_says_the_same(tmp_path):
    def make(device):
        if device == "meta":
            raise RuntimeError("reads values: cannot run on meta")
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9")

    with pytest.raises(WorkbenchError) as exc:
        tensors.make_inputs(make, "the inputs of shape (3,)", "cpu")
    problem = exc.value.problem
    assert problem.kind == "inputs-too-large" and problem.source == "usage"
    assert problem.cause.startswith("the inputs of shape (3,) did not fit")
    assert tensors.make_inputs(lambda d: (torch.ones(2, device=d),), "x", "cpu")[0].sum() == 2
