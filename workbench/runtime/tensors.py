"""Tensor plumbing for checks: device redirection, NaN-poisoned allocations, strided copies."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

DTYPE_NAMES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def torch_dtype(name: str) -> torch.dtype:
    return DTYPE_NAMES[name]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class _RedirectDevice(TorchFunctionMode):
    """Turns device="cuda" into the device at hand, so CUDA-only input factories run on CPU."""

    def __init__(self, device: str):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = dict(kwargs or {})
        dev = kwargs.get("device")
        if dev is not None and str(dev).startswith("cuda"):
            kwargs["device"] = self.device
        if func is torch.Tensor.cuda:
            return args[0].to(self.device)
        if func is torch.Tensor.to and len(args) > 1 and str(args[1]).startswith("cuda"):
            args = (args[0], self.device, *args[2:])
        return func(*args, **kwargs)


def on_device(factory: Callable[[], Any], device: str) -> Any:
    if device.startswith("cuda"):
        return factory()
    with _RedirectDevice(device):
        return factory()


_ALLOCATORS = ("empty", "empty_like", "empty_strided")


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Fill every floating-point tensor allocated with torch.empty* with NaN.

    A kernel that leaves part of its output unwritten then shows NaN there instead of whatever
    the allocator handed back (often the right answer from a previous run).
    """
    originals = {name: getattr(torch, name) for name in _ALLOCATORS}
    new_empty = torch.Tensor.new_empty

    def poison(make: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def wrapped(*args: Any, **kwargs: Any) -> torch.Tensor:
            t = make(*args, **kwargs)
            if t.is_floating_point():
                t.fill_(float("nan"))
            return t

        return wrapped

    try:
        for name, fn in originals.items():
            setattr(torch, name, poison(fn))
        torch.Tensor.new_empty = poison(new_empty)  # type: ignore[method-assign]
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = new_empty  # type: ignore[method-assign]


def strided_copy(t: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous view: every other column of a twice-as-wide buffer."""
    if t.ndim == 0 or t.numel() == 0:
        return t
    wide = torch.empty((*t.shape[:-1], t.shape[-1] * 2), dtype=t.dtype, device=t.device)
    wide.fill_(float("nan") if t.is_floating_point() else 0)
    view = wide[..., ::2]
    view.copy_(t)
    return view


def noncontig_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(strided_copy(a) if isinstance(a, torch.Tensor) else a for a in args)


def outputs(value: Any) -> list[torch.Tensor]:
    """A kernel's result as a flat list of tensors (a tensor, or a tuple/list of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit (NaN equals NaN when the bits match)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.contiguous(), b.contiguous()
    if a.is_floating_point():
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b)
