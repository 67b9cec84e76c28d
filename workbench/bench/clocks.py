"""The SM clock, power draw and clock-event reasons while a timing runs (GPU side: NVML through
its Python bindings, reached in `runtime.compat`; what the samples mean is `clock_rules`).

`sampled()` reads NVML from a background thread every PERIOD_S while its block runs and gives
the block a `Sampler`, whose `result()` after the block is the timing's `Clocks`. Without NVML
(no bindings, no driver, a device it cannot read) it gives None: the clocks are a fact beside
the timing, never a reason for the timing to fail.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from workbench.bench.clock_rules import Clocks, summary
from workbench.runtime import compat

T = TypeVar("T")
PERIOD_S = 0.005
"""Between two samples: some twenty over do_bench's 100 ms, each a few NVML calls of tens of
microseconds on a thread that holds the interpreter only that long."""


class Sampler:
    """Samples one device from a thread of its own until `stop`."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml, self.handle = nvml, handle
        self.max_mhz = _read(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)
        self.limit_mw = _read(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
        self.sm_mhz: list[float] = []
        self.power_mw: list[float] = []
        self.masks: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvml-clocks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(PERIOD_S):
                break
        self._sample()  # the timing's last moments, however short it was

    def _sample(self) -> None:
        nvml, handle = self.nvml, self.handle
        mhz = _read(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
        if mhz is None:
            return
        self.sm_mhz.append(float(mhz))
        if (mw := _read(nvml.nvmlDeviceGetPowerUsage, handle)) is not None:
            self.power_mw.append(float(mw))
        if (mask := _read(compat.clock_event_reasons, nvml, handle)) is not None:
            self.masks.append(mask)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        _read(self.nvml.nvmlShutdown)

    def result(self) -> Clocks | None:
        """What the samples say, once stopped; None when NVML gave no clock."""
        max_mhz = float(self.max_mhz) if self.max_mhz else None
        return summary(self.sm_mhz, self.power_mw, self.masks, max_mhz, self.limit_mw)


@contextlib.contextmanager
def sampled(device: int | None = None) -> Iterator[Sampler | None]:
    """NVML sampled while the block runs, on torch's CUDA device `device` (default: the
    current one); None without NVML. The block's own exceptions pass through."""
    sampler = _start(device)
    try:
        yield sampler
    finally:
        if sampler is not None:
            sampler.stop()


def during(fn: Callable[[], T], device: int | None = None) -> tuple[T, Clocks | None]:
    """fn's result and the clocks it ran at."""
    with sampled(device) as sampler:
        out = fn()
    return out, sampler.result() if sampler is not None else None


def _start(device: int | None) -> Sampler | None:
    nvml = compat.nvml_module()
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver: no clocks, and nothing to shut down
        return None
    try:
        import torch

        index = torch.cuda.current_device() if device is None else device
        return Sampler(nvml, nvml.nvmlDeviceGetHandleByIndex(compat.nvml_index(index)))
    except Exception:  # noqa: BLE001 - no clocks is a fact, not a failure of the timing
        _read(nvml.nvmlShutdown)
        return None


def _read(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args), or None when NVML cannot say (NVMLError: not supported, no permission, the
    driver gone)."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - pynvml raises its own NVMLError subclasses per code
        return None
