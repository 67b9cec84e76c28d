"""What one case of a kernel costs: the FLOPs it does and the fewest bytes it must move, each
with where the number comes from (child side: imports torch).

A spec's own formula (`flops=`, `bytes_moved=`) wins. Without one, the reference runs once under
torch's FlopCounterMode (matmuls, convolutions, attention): on `meta` copies of the inputs when it
runs there (shapes only, nothing computed, nothing on the GPU), else on the inputs themselves.
FLOPs scale exactly with shapes, so either gives the count of the inputs timed. The bytes are the
inputs' distinct storage read once plus the outputs written once. Element-wise and reduction ops
count no FLOPs: such a kernel stays on the memory side of the roofline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.flop_counter import FlopCounterMode

from workbench.bench.metrics import FLOP_COUNTER, INPUTS_OUTPUTS, SPEC, Work
from workbench.catalog.spec import KernelSpec, Shape
from workbench.runtime.tensors import outputs


def of_case(spec: KernelSpec, shape: Shape, esize: int, args: tuple[Any, ...]) -> Work:
    """The case's FLOPs and bytes: the spec's formulas where it has them, else counted on
    `args` (the inputs the case times)."""
    flops, flops_source = (spec.flops(shape), SPEC) if spec.flops else (None, None)
    nbytes, bytes_source = (
        (spec.bytes_moved(shape, esize), SPEC) if spec.bytes_moved else (None, None)
    )
    if flops_source is None or bytes_source is None:
        counted, written = count(spec.reference_fn, args)
        if flops_source is None and counted is not None:
            flops, flops_source = counted, FLOP_COUNTER
        if bytes_source is None and written is not None:
            nbytes, bytes_source = input_bytes(args) + written, INPUTS_OUTPUTS
    return Work(flops, flops_source, nbytes, bytes_source)


def count(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[float | None, float | None]:
    """(FLOPs, bytes of the outputs) of one call of `fn`: on meta copies of `args` when `fn` runs
    there, else on `args`; (None, None) when it fails on both."""
    for make in (_meta, lambda a: a):
        try:
            return _counted(fn, tree_map(make, args))
        except Exception:  # noqa: BLE001 - meta refuses data-dependent ops; the inputs then
            continue
    return None, None


def _counted(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[float, float]:
    with FlopCounterMode(display=False) as counter, Attention(counter) as attention:
        out = fn(*args)
    flops = counter.get_total_flops() + attention.correction
    written = {id(t): t.nbytes for t in outputs(out)}  # a tensor returned twice is written once
    return float(flops), float(sum(written.values()))


def _meta(a: Any) -> Any:
    return torch.empty_like(a, device="meta") if isinstance(a, torch.Tensor) else a


class Attention(TorchFunctionMode):
    """Counts each scaled_dot_product_attention call itself. torch's counter (2.8 to 2.13)
    counts full attention whatever `is_causal` says, and nothing for the CPU's fused op; a
    causal call does half the work (the FLOPs FlashAttention and its benchmarks count)."""

    def __init__(self, counter: FlopCounterMode):
        super().__init__()
        self.counter = counter
        self.correction = 0

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func is not torch.nn.functional.scaled_dot_product_attention:
            return func(*args, **kwargs)
        before = self.counter.get_total_flops()
        out = func(*args, **kwargs)
        counted = self.counter.get_total_flops() - before  # 0, full, or a version's own count
        q, k, v = (kwargs[n] if n in kwargs else args[i] for i, n in enumerate(QKV))
        self.correction += attention_flops(q.shape, k.shape, v.shape, _causal(args, kwargs))
        self.correction -= counted
        return out


QKV = ("query", "key", "value")


def _causal(args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
    """scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, ...)."""
    return bool(kwargs["is_causal"] if "is_causal" in kwargs else len(args) > 5 and args[5])


def attention_flops(q: Sequence[int], k: Sequence[int], v: Sequence[int], causal: bool) -> int:
    """Q K^T then P V over every query head (grouped-query heads included); half when causal."""
    batch = 1
    for n in q[:-2]:
        batch *= n
    full = 2 * batch * q[-2] * k[-2] * (q[-1] + v[-1])
    return full // 2 if causal else full


def input_bytes(args: tuple[Any, ...]) -> float:
    """Bytes the tensor inputs hold, each element once: views of one storage add up to at most
    that storage, a tensor passed twice counts once, a broadcast (stride 0) dimension once."""
    by_storage: dict[tuple[str, int], list[torch.Tensor]] = {}
    for t in _distinct([a for a in tree_flatten(args)[0] if isinstance(a, torch.Tensor)]):
        by_storage.setdefault((str(t.device), _storage(t)), []).append(t)
    total = 0
    for views in by_storage.values():
        held = sum(_elements(t) * t.element_size() for t in views)
        total += min(held, views[0].untyped_storage().nbytes()) if len(views) > 1 else held
    return float(total)


def _elements(t: torch.Tensor) -> int:
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        n *= size if stride else 1
    return n


def _storage(t: torch.Tensor) -> int:
    """Where the tensor's storage lives; a meta or empty tensor (address 0) is its own."""
    return t.untyped_storage().data_ptr() or id(t)


def _distinct(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors less repeats of the same view (same storage, offset, shape, strides, dtype)."""
    seen, out = set(), []
    for t in tensors:
        key = (_storage(t), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype, str(t.device))
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out
