"""Out-of-bounds loads and stores in Triton's interpreter, caught as they happen, at their line.

The interpreter runs a kernel on NumPy: every tl.load, tl.store and atomic reaches one of its
builder's memory ops with the raw addresses and the mask (`compat.interpreter_memory_hooks`).
While `watching`, those ops check each address the mask lets through against the extents of
the launch's tensor arguments, recorded as the interpreter takes them (`_init_args_hst`). An
address outside them all is an access out of bounds, put to the nearest tensor and to the
kernel's line on the Python stack (the interpreter executes the kernel's own source lines).
Addresses outside every argument's allocation are masked off as well, so that the interpreter
does not touch memory nobody owns. A load that returns the poison of a fresh allocation
(`tensors.UNWRITTEN`, exactly) reads what nothing has written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import triton

from workbench.check import access
from workbench.runtime import compat, tensors

Namer = Callable[[torch.Tensor], "str | None"]
_POISON = {  # NumPy dtype -> (unsigned view, the UNWRITTEN NaN's bits)
    np.dtype(np.float16): (np.uint16, tensors.nan_bits(torch.float16, tensors.UNWRITTEN)),
    np.dtype(np.float32): (np.uint32, tensors.nan_bits(torch.float32, tensors.UNWRITTEN)),
    np.dtype(np.float64): (np.uint64, tensors.nan_bits(torch.float64, tensors.UNWRITTEN)),
}
_SKIP = tuple(
    {
        folder + "/"
        for file in (triton.__file__, np.__file__, torch.__file__)
        if file
        for folder in (os.path.dirname(file), str(Path(file).resolve().parent))
    }
) + (str(Path(__file__).resolve().parents[1]) + "/",)
"""Frames of these packages are the machinery between a kernel line and the memory op."""


@dataclass
class _Extent:
    """A tensor argument: its view's bytes [start, end) and its allocation's [low, high)."""

    label: str
    start: int
    end: int
    low: int
    high: int
    esize: int

    @property
    def elements(self) -> int:
        return (self.end - self.start) // self.esize


class _Watch:
    def __init__(self, namer: Namer):
        self.namer = namer
        self.found: list[dict] = []
        self.extents: list[_Extent] = []
        self.kernel = ""
        self.unread: dict[tuple, set[int]] = {}

    def launch(self, fn: Any, names: list[str], args: list, kwargs: dict) -> None:
        self.kernel = getattr(fn, "__name__", "")
        self.extents = []
        for name, value in [*zip(names, args), *kwargs.items()]:
            self._collect(name, value)

    def _collect(self, name: str, value: Any) -> None:
        if isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                self._collect(f"{name}[{i}]", v)
        elif hasattr(value, "base") and hasattr(value, "block_shape"):  # a TensorDescriptor
            self._collect(name, value.base)
        elif isinstance(value, torch.Tensor):
            own = self.namer(value)
            label = f"{name} ({own})" if own and own != name else name
            start = value.data_ptr()
            storage = value.untyped_storage()
            esize = value.element_size()
            self.extents.append(
                _Extent(
                    label,
                    start,
                    start + tensors.extent(value) * esize,
                    storage.data_ptr(),
                    storage.data_ptr() + storage.nbytes(),
                    esize,
                )
            )

    def check(self, ptrs: Any, mask: Any, kind: str) -> Any:
        """The mask, less the lanes outside every allocation (to keep the process alive),
        once the live lanes outside every tensor are recorded."""
        live = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data))
        stray = self.outside(ptrs, live, kind)
        return type(mask)(live & ~stray, mask.dtype) if stray.any() else mask

    def outside(self, ptrs: Any, live: np.ndarray, kind: str) -> np.ndarray:
        """Record the live lanes outside every tensor; the lanes outside every allocation."""
        addrs = np.asarray(ptrs.data).astype(np.int64)
        size = _element_bytes(ptrs)
        inside = np.zeros(addrs.shape, dtype=bool)
        owned = np.zeros(addrs.shape, dtype=bool)
        for e in self.extents:
            inside |= (addrs >= e.start) & (addrs + size <= e.end)
            owned |= (addrs >= e.low) & (addrs + size <= e.high)
        out = live & ~inside
        stray = out & ~owned
        if out.any():
            self._record(kind, addrs[out], size, int(stray.sum()))
        return stray

    def _record(self, kind: str, addrs: np.ndarray, size: int, stray: int) -> None:
        file, line = _kernel_line()
        if not self.extents:
            self.found.append(access.record(kind, "interpreter", "?", len(addrs), file=file,
                                            line=line, kernel=self.kernel))  # fmt: skip
            return
        starts = np.array([e.start for e in self.extents], dtype=np.int64)[:, None]
        ends = np.array([e.end for e in self.extents], dtype=np.int64)[:, None]
        distance = np.maximum(np.maximum(starts - addrs, addrs + size - ends), 0)
        nearest = distance.argmin(axis=0)
        for i, e in enumerate(self.extents):
            mine = addrs[nearest == i]
            for side, sel in (("before", mine < e.start), ("after", mine >= e.start)):
                if not sel.any():
                    continue
                offsets = (mine[sel] - e.start) // e.esize
                offset = int(offsets.min() if side == "before" else offsets.max())
                farthest = -offset if side == "before" else offset - e.elements + 1
                self.found.append(
                    access.record(
                        kind,
                        "interpreter",
                        e.label,
                        int(sel.sum()),
                        side=side,
                        offset=offset,
                        extent=e.elements,
                        farthest=farthest,
                        kernel=self.kernel,
                        file=file,
                        line=line,
                        **({"masked_off": stray} if stray else {}),
                    )
                )

    def unwritten(self, ptrs: Any, mask: Any, loaded: Any) -> None:
        """Record lanes that loaded the poison of a fresh allocation."""
        data = np.asarray(loaded.data)
        poison = _POISON.get(data.dtype)
        if poison is None:
            return
        view, bits = poison
        live = np.broadcast_to(np.asarray(mask.data, dtype=bool), data.shape)
        hit = live & (data.view(view) == bits)
        if not hit.any():
            return
        addrs = np.asarray(ptrs.data).astype(np.int64)[hit]
        file, line = _kernel_line()
        for e in self.extents:
            mine = addrs[(addrs >= e.start) & (addrs < e.end)]
            if mine.size:
                key = (e.label, e.elements, self.kernel, file, line)
                self.unread.setdefault(key, set()).update(mine.tolist())

    def uninitialised(self) -> list[dict]:
        """One record per tensor and line, counting distinct elements (a second launch that
        reads the poison the first carried through counts once)."""
        return [
            access.record(
                "uninitialised-read",
                "interpreter",
                label,
                len(seen),
                extent=elements,
                kernel=kernel,
                file=file,
                line=line,
            )  # fmt: skip
            for (label, elements, kernel, file, line), seen in self.unread.items()
        ]


_ACTIVE: list[_Watch] = []
_INSTALLED: list[bool] = []


def install() -> bool:
    """Wrap the interpreter's memory ops (once per process); False where this Triton's
    interpreter has them otherwise (`compat.interpreter_memory_hooks`)."""
    if _INSTALLED:
        return _INSTALLED[0]
    hooks = compat.interpreter_memory_hooks()
    _INSTALLED.append(hooks is not None)
    if hooks is None:
        return False
    builder, executor = hooks
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def masked_load(ptrs: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        if not _ACTIVE:
            return load(ptrs, mask, *rest, **kw)
        mask = _ACTIVE[-1].check(ptrs, mask, "read")
        loaded = load(ptrs, mask, *rest, **kw)
        _ACTIVE[-1].unwritten(ptrs, mask, loaded)
        return loaded

    def masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        if _ACTIVE:
            mask = _ACTIVE[-1].check(ptrs, mask, "write")
        return store(ptrs, value, mask, *rest, **kw)

    def atomic_rmw(op: Any, ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        if _ACTIVE:
            mask = _ACTIVE[-1].check(ptrs, mask, "write")
        return rmw(op, ptrs, value, mask, *rest, **kw)

    def atomic_cas(ptrs: Any, *rest: Any, **kw: Any) -> Any:
        if _ACTIVE:  # no mask to narrow: recorded only
            _ACTIVE[-1].outside(ptrs, np.ones(np.shape(ptrs.data), dtype=bool), "write")
        return cas(ptrs, *rest, **kw)

    builder.create_masked_load = masked_load
    builder.create_masked_store = masked_store
    builder.create_atomic_rmw = atomic_rmw
    builder.create_atomic_cas = atomic_cas
    take_args = executor._init_args_hst

    def init_args(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args, kw = take_args(self, args_dev, kwargs)
        if _ACTIVE:
            _ACTIVE[-1].launch(self.fn, list(self.arg_names), list(args), dict(kw))
        return args, kw

    executor._init_args_hst = init_args
    return True


@contextmanager
def watching(namer: Namer) -> Iterator[list[dict]]:
    """Check every interpreted access while inside; yields the records, filled as it goes
    (merged per tensor and line once it ends). `namer` names a tensor argument's storage (a
    guarded input or output) beside its parameter name."""
    watch = _Watch(namer)
    _ACTIVE.append(watch)
    try:
        yield watch.found
    finally:
        _ACTIVE.remove(watch)
        watch.found[:] = access.merge([*watch.found, *watch.uninitialised()])


def _element_bytes(ptrs: Any) -> int:
    return max(1, int(ptrs.get_element_ty().primitive_bitwidth) // 8)


def _kernel_line() -> tuple[str | None, int | None]:
    """The innermost frame of the kernel's own code: not Triton's, NumPy's or the workbench's."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_SKIP) and not name.startswith("<"):
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None
