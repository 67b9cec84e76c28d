"""Differences between Triton versions and modes, in one place."""

from __future__ import annotations

import os
from typing import Any


def autotune_configs(configs: list[Any], interpreter_config: Any) -> list[Any]:
    """The configs to give `@triton.autotune`: all of them, or only `interpreter_config` when
    kernels run in Triton's interpreter (TRITON_INTERPRET=1).

    With several configs the autotuner times them with the GPU's event timer, which the
    interpreter lacks ("0 active drivers"); a single config is launched untimed. A small tile
    there also keeps CPU runs short. Triton reads the variable when `@triton.jit` decorates, so
    call this at import time, where the decorators run.
    """
    flag = os.environ.get("TRITON_INTERPRET", "").strip().lower()
    return [interpreter_config] if flag in ("1", "true", "on", "yes") else list(configs)


def tensor_descriptor() -> Any:
    """Triton's host-side TMA descriptor class (`TensorDescriptor`, 3.4+), or None without it."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor
