"""What a check case launched: each Triton kernel's grid and integer constexprs, recorded on the
way through as kernel_fn launches them (the launch itself runs unchanged).

The wrong elements of a missing tail fit a range of block widths (one unwritten element fits any
width that does not divide the size); the launch says which one the kernel uses, and whether its
grid floors the size (`check.verdict.tail`).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from workbench.runtime import compat

MAX_KERNELS = 8
"""Distinct kernels kept per case: a workload launching dozens keeps its first ones."""


@contextlib.contextmanager
def recorded(into: list[dict]) -> Iterator[None]:
    """While inside, append {"kernel", "grid", "constexprs"} to `into` for the first launch of
    each @triton.jit function (compiled or interpreted)."""
    classes = _classes()
    saved = {cls: cls.run for cls in classes}

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup"):
                _note(into, self, args, kwargs)
            return original(self, *args, **kwargs)

        return run

    try:
        for cls, original in saved.items():
            cls.run = wrap(original)
        yield
    finally:
        for cls, original in saved.items():
            cls.run = original


def _classes() -> list[type]:
    from triton.runtime.interpreter import InterpretedFunction

    return [compat.launcher_classes()["jit"], InterpretedFunction]


def _note(into: list[dict], fn: Any, args: tuple, kwargs: dict) -> None:
    name = getattr(fn, "__name__", "?")
    if len(into) >= MAX_KERNELS or any(seen["kernel"] == name for seen in into):
        return
    try:
        params = inspect.signature(fn.fn).parameters
        bound = inspect.signature(fn.fn).bind_partial(
            *args, **{k: v for k, v in kwargs.items() if k in params}
        )
        bound.apply_defaults()
        grid: Any = kwargs["grid"]
        if callable(grid):
            grid = grid({**kwargs, **bound.arguments})
        constexprs = {
            k: v
            for k, v in bound.arguments.items()
            if "constexpr" in str(params[k].annotation) and type(v) is int
        }
        into.append({"kernel": name, "grid": [int(g) for g in grid], "constexprs": constexprs})
    except Exception:  # noqa: BLE001, S110 - a launch that cannot be read is not recorded; it runs
        pass
