"""What this machine can do, decided without importing torch."""

from __future__ import annotations

import os
import shutil

from workbench.run.kinds import COMMANDS

STORE_ACTIONS = ("report", "history", "profile --import")
"""Commands outside the registry (`run.kinds.COMMANDS`): they read the store, or a report, on
any machine."""
GPU_OPTIONS = ("cache verify", "diagnose --try")
"""What needs a GPU in commands that run anywhere (`sweep` and `diagnose` gather what the
machine gives)."""


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
    """Every command of the registry and the others (`list` says which run here)."""
    gpu = has_gpu()
    found = {c.name: gpu or not c.gpu_only for c in COMMANDS.values()}
    return {**found, **{a: True for a in STORE_ACTIONS}, **{a: gpu for a in GPU_OPTIONS}}


def needs_gpu_message(action: str) -> str:
    return (
        f"`{action}` needs a CUDA GPU and this machine has none; run it on a GPU host, or "
        "read a saved report with `workbench profile --import FILE`"
    )
