"""What this machine can do, decided without importing torch."""

from __future__ import annotations

import os
import shutil

GPU_ACTIONS = ("bench", "profile", "cache verify", "diagnose --try")
ANYWHERE_ACTIONS = (
    "check",
    "ir",
    "resources",
    "sweep",  # compiles and resources; timing needs a GPU
    "diagnose",  # the facts this machine can gather
    "cache",
    "report",
    "history",
    "profile --import",
)


def has_gpu() -> bool:
    """WORKBENCH_DEVICE=cpu|cuda decides; else the NVIDIA driver's device node or nvidia-smi."""
    forced = os.environ.get("WORKBENCH_DEVICE", "").lower()
    if forced:
        return forced.startswith("cuda")
    return gpu_present()


def gpu_present() -> bool:
    """An NVIDIA driver is here, whatever WORKBENCH_DEVICE says."""
    return os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi") is not None


def mode() -> str:
    return "gpu" if has_gpu() else "interpreter"


def actions() -> dict[str, bool]:
    gpu = has_gpu()
    return {**{a: True for a in ANYWHERE_ACTIONS}, **{a: gpu for a in GPU_ACTIONS}}


def needs_gpu_message(action: str) -> str:
    return (
        f"`{action}` needs a CUDA GPU and this machine has none; run it on a GPU host, or "
        "read a saved report with `workbench profile --import FILE`"
    )
