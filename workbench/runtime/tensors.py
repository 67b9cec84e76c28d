"""Tensor plumbing for checks: device redirection, NaN-poisoned allocations, strided copies,
the NaN payloads that tell an unwritten output from a read of input padding, guard regions
around every tensor a kernel is handed, and the memory a case's inputs need."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from workbench.runtime.errors import fail

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

    def __torch_function__(
        self, func: Callable[..., Any], types: Any, args: tuple = (), kwargs: dict | None = None
    ) -> Any:
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


def nan_bits(dtype: torch.dtype, payload: int) -> int | None:
    """The quiet NaN of `payload` in `dtype`, as an integer of its width (None for dtypes
    without room for a payload)."""
    spec = _NAN_BITS.get(dtype)
    if spec is None:
        return None
    _, mantissa, exponent = spec
    return ((1 << exponent) - 1) << mantissa | payload << (mantissa - 7)


def fill_nan(t: torch.Tensor, payload: int) -> torch.Tensor:
    """Fill a floating-point tensor with the quiet NaN of `payload` (plain NaN for dtypes
    without room for one, such as fp8), through an integer view of the same width."""
    bits = nan_bits(t.dtype, payload)
    if bits is None:
        return t.fill_(float("nan"))
    t.view(_NAN_BITS[t.dtype][0]).fill_(bits)
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
def poisoned_allocations(
    guards: list[Guarded] | None = None, poison: bool = True
) -> Iterator[None]:
    """Fill every floating-point tensor allocated with torch.empty* with the UNWRITTEN NaN.

    A kernel that leaves part of its output unwritten then shows that NaN there instead of
    whatever the allocator handed back (often the right answer from a previous run). With
    `guards`, each allocation is also a view inside guard margins (`guard`), appended there and
    named by the line that allocated it. `poison=False` leaves the contents as allocated
    (compute-sanitizer's initcheck must see them unwritten).
    """
    originals = {name: getattr(torch, name) for name in _ALLOCATORS}
    new_empty = torch.Tensor.new_empty

    def poison_fn(make: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def wrapped(*args: Any, **kwargs: Any) -> torch.Tensor:
            t = make(*args, **kwargs)
            if guards is not None and guardable(t):
                g = guard(t, _allocation_site(), len(guards), copy=False)
                guards.append(g)
                t = g.view
            if poison and t.is_floating_point():
                fill_nan(t, UNWRITTEN)
            return t

        return wrapped

    try:
        for name, fn in originals.items():
            setattr(torch, name, poison_fn(fn))
        torch.Tensor.new_empty = poison_fn(new_empty)
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = new_empty


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


# ---- guard regions ---------------------------------------------------------------------------

GUARD_BYTES = 16384
"""Each margin's size: a missing or wrong mask reaches at most a block past a tensor's end
(1024 fp32 elements are 4 KiB); a multiple of 256 bytes keeps a view as aligned as its buffer,
so the kernel compiles the same specialisation as on a plain allocation."""
GUARD_BEFORE = tuple(0b1011000 + i for i in range(8))
GUARD_AFTER = tuple(0b1101000 + i for i in range(8))
"""NaN payloads of the margins before and after the i-th guarded tensor (i mod 8): quiet (top
bit set) and apart from UNWRITTEN, PADDING and the canonical NaNs, so a value read past a
tensor's end that lands in an output says whose margin, and which side, it came from. Integer
tensors' margins repeat the payload as a byte."""
_INT_VIEWS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_EMPTY = torch.empty  # the allocator itself, also while poisoned_allocations wraps torch.empty


@dataclass
class Guarded:
    """A tensor handed to the kernel as a view inside a buffer whose margins hold a pattern."""

    name: str
    buffer: torch.Tensor
    """1-D, of the view's dtype: margin, the view's span, margin."""
    view: torch.Tensor
    margin: int
    """Elements on each side."""
    span: int
    """Elements from the view's first to its last, the gaps of a strided view included."""
    index: int
    """Which payload its margins hold (index mod 8)."""

    def margin_bits(self, side: str) -> int:
        return guard_bits(self.buffer.dtype, self.index, side)

    def region(self, side: str) -> torch.Tensor:
        """One margin ("before" or "after") as integers of the element's width."""
        ints = self.buffer.view(_INT_VIEWS[self.buffer.element_size()])
        return ints[: self.margin] if side == "before" else ints[self.margin + self.span :]


def guard_bits(dtype: torch.dtype, index: int, side: str) -> int:
    """A margin element of `dtype` as a signed integer of its width."""
    payload = (GUARD_BEFORE if side == "before" else GUARD_AFTER)[index % len(GUARD_BEFORE)]
    size = dtype.itemsize
    bits = nan_bits(dtype, payload)
    if bits is None:
        bits = int.from_bytes(bytes([payload]) * size, "little")
    return bits - (1 << 8 * size) if bits >= 1 << (8 * size - 1) else bits


def extent(t: torch.Tensor) -> int:
    """Elements from a view's first to its last in its storage (0 when it has none)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def guardable(t: torch.Tensor) -> bool:
    """A dense CPU or CUDA tensor of a width the margins can be compared in; a tensor that
    asks for gradients keeps its own storage (a view of a guard buffer would not be a leaf)."""
    return (
        t.device.type in ("cpu", "cuda")
        and t.layout == torch.strided
        and t.element_size() in _INT_VIEWS
        and not t.requires_grad
        and min(t.stride(), default=0) >= 0
    )


def guard(t: torch.Tensor, name: str, index: int, copy: bool = True) -> Guarded:
    """`t` as a view, with the same shape and strides, in the middle of a buffer with
    GUARD_BYTES of margin each side holding guard payload `index`; `copy` copies its span (gaps
    included) in."""
    margin = GUARD_BYTES // t.element_size()
    span = extent(t)
    buffer = _EMPTY(span + 2 * margin, dtype=t.dtype, device=t.device)
    g = Guarded(name, buffer, buffer.as_strided(t.shape, t.stride(), margin), margin, span, index)
    for side in ("before", "after"):
        g.region(side).fill_(g.margin_bits(side))
    if copy and span:
        buffer[margin : margin + span].copy_(t.as_strided((span,), (1,), t.storage_offset()))
    return g


def guard_args(args: tuple[Any, ...], names: list[str]) -> tuple[tuple[Any, ...], list[Guarded]]:
    """Each tensor argument as a guarded copy. Arguments that share a storage keep it (and
    no margins): copying them apart would break the aliasing the kernel may rely on."""
    shared: dict[int, int] = {}
    for a in args:
        if isinstance(a, torch.Tensor):
            key = a.untyped_storage().data_ptr()
            shared[key] = shared.get(key, 0) + 1
    out: list[Any] = []
    guards: list[Guarded] = []
    for a, name in zip(args, names):
        if (
            isinstance(a, torch.Tensor)
            and guardable(a)
            and shared[a.untyped_storage().data_ptr()] == 1
        ):
            guards.append(guard(a, name, len(guards)))
            a = guards[-1].view
        out.append(a)
    return tuple(out), guards


def _allocation_site() -> str:
    """'file.py:LINE' of the code that called the allocator."""
    here = __file__
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == here:
        frame = frame.f_back
    if frame is None:
        return "an allocation"
    return f"the buffer allocated at {Path(frame.f_code.co_filename).name}:{frame.f_lineno}"


# ---- the memory a case's inputs need ---------------------------------------------------------


def tensor_bytes(value: Any) -> int:
    """Bytes of the tensors in `value` (a tensor, or a tuple/list of them, nested)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    return 0


def measured_on_meta(make: Callable[[str], Any]) -> int | None:
    """The bytes of what `make(device)` returns, made on the meta device, which allocates
    nothing; None when `make` cannot run there (it reads values, or builds on NumPy)."""
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            return tensor_bytes(make("meta"))
    except Exception:  # noqa: BLE001 - any failure means only the real allocation can tell
        return None


def sizes_on_meta(make: Callable[[str], Any], device: str) -> Any:
    """What `make(device)` returns, made on the meta device when it can be (shapes without
    memory), else on `device`."""
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            return make("meta")
    except Exception:  # noqa: BLE001 - NumPy inputs and the like: the real device it is
        return make(device)


def available_bytes(device: str) -> tuple[int, str] | None:
    """(bytes, what they are) the inputs can take: free GPU memory (the caching allocator's
    unused reserve included), or in interpreter mode the host's MemAvailable; None where it
    cannot be told (no CUDA in this torch: whatever the kernel does with its inputs decides)."""
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return None
        free, _ = torch.cuda.mem_get_info()
        spare = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        return free + spare, "free on the GPU"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024, "available on this host (MemAvailable)"
    except (OSError, ValueError, IndexError):
        pass
    return None


def size_text(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:,.1f} TB"


TOO_LARGE_REMEDY = (
    "pick a smaller shape (--shape, or a smaller shape set in the KernelSpec); in interpreter "
    "mode a case's tensors live in host memory"
)


def make_inputs(make: Callable[[str], Any], what: str, device: str, copies: int = 1) -> Any:
    """`make(device)`, refused when the tensors it makes, `copies` times over (guarded copies
    beside the originals), exceed the memory `available_bytes` finds; an allocator that gives
    out is turned into the same message.

    Host memory is weighed on the meta device before anything is allocated: an overcommitted
    host may kill the process rather than fail an allocation. A GPU's allocator fails cleanly,
    so there the originals are made first and the copies weighed against what is left: the
    meta device's first use in a process imports torch's reference ops, 6.5 s on the GPU host
    (the first capture of every sweep worker, every check's first case)."""
    gpu = device.startswith("cuda")
    if not gpu:
        _refuse(measured_on_meta(make), copies, available_bytes(device), what)
    try:
        made = make(device)
    except (torch.OutOfMemoryError, MemoryError) as exc:
        raise _too_large(
            f"{what} did not fit ({type(exc).__name__})", available_bytes(device)
        ) from exc
    except RuntimeError as exc:
        if "can't allocate memory" not in str(exc):
            raise
        said = f"{what} did not fit ({str(exc).splitlines()[0][:200]})"
        raise _too_large(said, available_bytes(device)) from exc
    if gpu and copies > 1:
        need, left = tensor_bytes(made), available_bytes(device)
        _refuse(need, copies, left and (left[0] + need, left[1]), what)
    return made


def _refuse(need: int | None, copies: int, have: tuple[int, str] | None, what: str) -> None:
    """Raise inputs-too-large when `need` bytes, `copies` times over, exceed `have`."""
    if need is None or have is None or need * copies <= have[0]:
        return
    twice = (
        f" ({copies} times their size: guarded, strided and the reference's wider copies "
        "beside them)"
        if copies > 1
        else ""
    )
    raise _too_large(f"{what} need {size_text(need * copies)}{twice}", have)


def _too_large(said: str, have: tuple[int, str] | None) -> Exception:
    there = f"; {size_text(have[0])} {have[1]}" if have else ""
    return fail("inputs-too-large", said + there, TOO_LARGE_REMEDY, source="usage")


def inputs_text(shape: Any, dtype: str | None) -> str:
    """'the inputs of shape (4096, 4096) float16', for messages."""
    made = f"shape {tuple(shape)}" if shape else "get_inputs()"
    return f"the inputs of {made}" + (f" {dtype}" if dtype else "")
