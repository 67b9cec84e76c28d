"""The clocks sampled while the bench times, on the GPU host: NVML found for torch's device, read
from its thread for the whole timing, and kept on each case for the kernel and for torch.

Run with `python -m pytest -m gpu tests/gpu/test_clocks_gpu.py`; needs NVML's bindings (pynvml,
which torch's CUDA wheels bring)."""

from __future__ import annotations

import json
import time

import pytest
from conftest import cli

from workbench.bench.clock_rules import REASONS

pytestmark = pytest.mark.gpu


def _sane(c: dict, min_samples: int) -> None:
    assert c["samples"] >= min_samples, c
    assert 0 < c["sm_mhz_min"] <= c["sm_mhz"] <= c["max_mhz"], c
    assert 500 <= c["max_mhz"] <= 4000, c  # an SM clock in MHz, not kHz or Hz
    assert 100 <= c["power_limit_w"] <= 2000, c  # watts, not milliwatts
    assert 0 < c["power_w"] <= 1.2 * c["power_limit_w"], c
    assert set(c["reasons"]) <= set(REASONS.values()), c


def test_the_device_nvml_reads_is_the_one_torch_times_on():
    pytest.importorskip("pynvml", reason="NVML's bindings (pip install nvidia-ml-py)")
    import torch

    from workbench.runtime import compat

    nvml = compat.nvml_module()
    nvml.nvmlInit()
    try:
        index = torch.cuda.current_device()
        handle = nvml.nvmlDeviceGetHandleByIndex(compat.nvml_index(index))
        uuid = nvml.nvmlDeviceGetUUID(handle)
        uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
        assert str(torch.cuda.get_device_properties(index).uuid) in uuid
        assert compat.clock_event_reasons(nvml, handle) >= 0
    finally:
        nvml.nvmlShutdown()


def test_a_sustained_matmul_is_sampled_all_along():
    pytest.importorskip("pynvml", reason="NVML's bindings (pip install nvidia-ml-py)")
    import torch

    from workbench.bench import clocks

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def work() -> float:
        start = time.perf_counter()
        while time.perf_counter() - start < 0.3:
            a @ a
            torch.cuda.synchronize()
        return time.perf_counter() - start

    spent, got = clocks.during(work)
    assert got is not None and spent >= 0.3
    _sane(got.to_dict(), min_samples=int(0.3 / clocks.PERIOD_S / 2))


def test_bench_keeps_the_clocks_of_the_kernel_and_of_torch():
    pytest.importorskip("pynvml", reason="NVML's bindings (pip install nvidia-ml-py)")
    proc = cli("bench", "vector_add", "--shape", "16777216", "--dtype", "float32", "--json")
    assert proc.stdout.strip(), proc.stderr[-3000:]
    (rec,) = json.loads(proc.stdout)["result"]["records"]
    assert proc.returncode == 0 and rec["status"] == "ok", proc.stderr[-3000:]
    for key in ("clocks", "torch_clocks"):  # do_bench's ~125 ms each: some twenty samples
        _sane(rec[key], min_samples=10)
