"""The reference run in higher precision: the yardstick `check.compare` measures both the kernel
and the reference at the test dtype against, so each case's tolerance is the reference's own
error at that dtype rather than a table.

reference_fn runs on float64 copies of the floating-point tensor inputs (float32 copies where
float64 ones would pass MAX_FLOAT64_ELEMENTS, or where the reference refuses float64), from
torch's random state as it was: a reference that draws from torch's generator draws what its
run at the test dtype draws next, and the kernel's inputs and draws stay as they were. No run
is made, with the reason, when no input would get wider (no floating-point tensor among them:
weights held inside a module stay as they are) or when the reference raises at both widths.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from workbench.runtime import tensors

MAX_FLOAT64_ELEMENTS = 1 << 27
"""Tensor input elements up to which float64 copies are made (1 GiB of copies): beyond, a bench
shape's reference would hold several times that on the GPU; float32 copies are made instead."""


@dataclass
class Yardstick:
    outputs: list[torch.Tensor] | None
    """The reference's outputs from the wider inputs; None when it was not run."""
    precision: str
    """"float64" or "float32": the width of the copies; "" when not run."""
    why: str = ""
    """Why not run (or why float32 rather than float64)."""


def run(reference_fn: Callable[..., Any], args: tuple[Any, ...]) -> Yardstick:
    floats = [t for t in _tensors(args) if t.is_floating_point()]
    if not floats:
        return Yardstick(None, "", "no floating-point tensor among the inputs")
    widths = [torch.float64, torch.float32]
    why = ""
    if sum(t.numel() for t in floats) > MAX_FLOAT64_ELEMENTS:
        widths, why = [torch.float32], "inputs too large for float64 copies"
    for width in widths:
        if all(_bits(t.dtype) >= _bits(width) for t in floats):
            why = why or f"the inputs are already {tensors.dtype_name(width)}"
            continue
        try:
            with torch.random.fork_rng(devices=_cuda_devices(floats)):
                found = tensors.outputs(reference_fn(*_wider(args, width)))
            return Yardstick(found, tensors.dtype_name(width), why)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            why = f"{tensors.dtype_name(width)} copies did not fit in memory"
        except Exception as exc:  # noqa: BLE001 - a reference may refuse a dtype; say which
            why = f"the reference raised on {tensors.dtype_name(width)} inputs ({exc!r:.120})"
    return Yardstick(None, "", why)


def _tensors(args: Any) -> list[torch.Tensor]:
    if isinstance(args, torch.Tensor):
        return [args]
    if isinstance(args, (list, tuple)):
        return [t for a in args for t in _tensors(a)]
    return []


def _wider(args: Any, width: torch.dtype) -> Any:
    """`args` with each floating-point tensor narrower than `width` copied to it."""
    if isinstance(args, torch.Tensor):
        narrower = args.is_floating_point() and _bits(args.dtype) < _bits(width)
        return args.to(width) if narrower else args
    if isinstance(args, list):
        return [_wider(a, width) for a in args]
    if isinstance(args, tuple):
        return tuple(_wider(a, width) for a in args)
    return args


def _bits(dtype: torch.dtype) -> int:
    return torch.finfo(dtype).bits


def _cuda_devices(floats: list[torch.Tensor]) -> list[int]:
    return sorted({t.device.index or 0 for t in floats if t.is_cuda})
