"""Tensor plumbing for checks: device redirection, NaN-poisoned allocations, strided copies,
and the NaN payloads that tell an unwritten output from a read of input padding."""

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


# NaN payloads tell the check's two poisons apart: a NaN whose top seven mantissa bits are
# UNWRITTEN was never overwritten in a fresh allocation; PADDING was read from the gap of a
# strided input copy. Seven bits (the quiet bit and six payload bits) are all bfloat16 has, so
# both fit every dtype; placed at the top of the mantissa, they survive the conversions between
# fp16, bf16, fp32 and fp64 that keep the top bits (the interpreter's casts and copies do; a
# GPU's arithmetic turns any NaN into its canonical one, all ones, and so does torch's
# fp16 -> fp32 cast). Neither is a canonical NaN: x86 and torch's nan is 0b1000000, CUDA's
# 0b1111111.
UNWRITTEN = 0b1010101
PADDING = 0b1100110
_NAN_BITS = {  # dtype -> (integer view, mantissa bits, exponent bits)
    torch.float64: (torch.int64, 52, 11),
    torch.float32: (torch.int32, 23, 8),
    torch.float16: (torch.int16, 10, 5),
    torch.bfloat16: (torch.int16, 7, 8),
}


def fill_nan(t: torch.Tensor, payload: int) -> torch.Tensor:
    """Fill a floating-point tensor with the quiet NaN of `payload` (plain NaN for dtypes
    without room for one, such as fp8), through an integer view of the same width."""
    spec = _NAN_BITS.get(t.dtype)
    if spec is None:
        return t.fill_(float("nan"))
    view, mantissa, exponent = spec
    t.view(view).fill_(((1 << exponent) - 1) << mantissa | payload << (mantissa - 7))
    return t


def nan_payload(t: torch.Tensor) -> torch.Tensor:
    """The top seven mantissa bits of each element, as int64 (-1 for dtypes without payloads);
    meaningful where the element is NaN."""
    spec = _NAN_BITS.get(t.dtype)
    if spec is None:
        return torch.full(t.shape, -1, dtype=torch.int64, device=t.device)
    view, mantissa, _ = spec
    bits = t.view(view).to(torch.int64)
    return (bits >> (mantissa - 7)) & 0x7F


_ALLOCATORS = ("empty", "empty_like", "empty_strided")


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Fill every floating-point tensor allocated with torch.empty* with the UNWRITTEN NaN.

    A kernel that leaves part of its output unwritten then shows that NaN there instead of
    whatever the allocator handed back (often the right answer from a previous run).
    """
    originals = {name: getattr(torch, name) for name in _ALLOCATORS}
    new_empty = torch.Tensor.new_empty

    def poison(make: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def wrapped(*args: Any, **kwargs: Any) -> torch.Tensor:
            t = make(*args, **kwargs)
            if t.is_floating_point():
                fill_nan(t, UNWRITTEN)
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
    """The same values in a non-contiguous view: every other column of a twice-as-wide buffer
    whose gaps hold the PADDING NaN (0 for integer tensors)."""
    if t.ndim == 0 or t.numel() == 0:
        return t
    wide = torch.empty((*t.shape[:-1], t.shape[-1] * 2), dtype=t.dtype, device=t.device)
    if t.is_floating_point():
        fill_nan(wide, PADDING)
    else:
        wide.fill_(0)
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
    # fresh dense copies: .contiguous() keeps a (1, 1) view's stride 2, which .view refuses
    a, b = (t.clone(memory_format=torch.contiguous_format).reshape(-1) for t in (a, b))
    if a.is_floating_point():
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b)
