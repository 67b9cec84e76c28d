"""What a check case's kernel touched outside the tensors it was handed.

`Watch` wraps one case: every tensor argument becomes a guarded copy and every tensor the
launcher allocates a guarded buffer (`tensors.guard`: margins holding a payload of their own);
in the interpreter, `check.bounds` watches each access as it happens. After the call a changed
margin byte is a write out of bounds (which tensor, which end, how far, how many elements), and
an output element holding a margin's payload a read out of bounds (an input read past its end
whose value reached an output, or another margin). Each is placed at the kernel's line: the
interpreter saw it happen; on a GPU, the launch's TTIR tells which store or load reaches that
tensor (`ir.pointers`), when only one (or one masked one) can.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from workbench.check import access, bounds
from workbench.check.result import CaseResult
from workbench.ir import pointers
from workbench.runtime import compat, tensors
from workbench.runtime.tensors import Guarded


@dataclass
class _Launch:
    fn: Any
    tensors: list[tuple[int, torch.Tensor]]
    """(ordinal among the launch's tensor arguments, the tensor)."""
    ttir: str | None


class Watch:
    """One case's guards: `args` are what the kernel and the reference take; run kernel_fn
    inside `kernel()`, compare, then `conclude`."""

    def __init__(
        self, kernel_fn: Any, args: tuple[Any, ...], interpreter: bool, enabled: bool = True
    ):
        self.enabled = enabled
        self.guards: list[Guarded] = []
        self.args = args
        if enabled:
            self.args, self.guards = tensors.guard_args(args, _arg_names(kernel_fn, len(args)))
        self.inputs = len(self.guards)
        self.interpreter = enabled and interpreter and bounds.install()
        self.launches: list[_Launch] = []
        self.seen: list[dict] = []

    @contextmanager
    def kernel(self, poison: bool = True) -> Iterator[None]:
        """Fresh allocations poisoned (and guarded), launches recorded, interpreted accesses
        checked."""
        with ExitStack() as stack:
            stack.enter_context(
                tensors.poisoned_allocations(self.guards if self.enabled else None, poison)
            )
            if self.enabled and not self.interpreter:
                stack.enter_context(self._recorded_launches())
            if self.interpreter:
                self.seen = stack.enter_context(bounds.watching(self._name_of))
            yield

    def conclude(self, case: CaseResult, out: list[torch.Tensor]) -> None:
        """Read the margins and the outputs; a case with an access out of bounds fails."""
        if not self.enabled:
            return
        renames = self._name_outputs(out)
        for r in self.seen:
            for old, new in renames.items():
                r["tensor"] = str(r["tensor"]).replace(old, new)
        found = [*self._margins(), *self._reads_in(out)]
        for r in found:
            self._place(r)
        case.accesses = access.merge([*found, *self.seen])
        if case.accesses:
            case.status = "failed"
            said = "; ".join(access.describe(r) for r in case.accesses[:4])
            case.reason = f"{case.reason}; {said}" if case.reason else said

    # ---- what the margins and outputs hold --------------------------------------------------

    def _margins(self) -> Iterator[dict]:
        for g in self.guards:
            for side in ("before", "after"):
                changed = g.region(side) != g.margin_bits(side)
                n = int(changed.sum())
                if not n:
                    continue
                at = torch.nonzero(changed).reshape(-1)
                if side == "before":
                    farthest = g.margin - int(at.min())
                    offset = -farthest
                else:
                    farthest = int(at.max()) + 1
                    offset = g.span + farthest - 1
                yield access.record(
                    "write", "guards", g.name, n, side=side, offset=offset, extent=g.span,
                    farthest=farthest,
                )  # fmt: skip
                values = self._margin_values(g, side)[changed.to(g.buffer.device)]
                yield from self._payload_reads(values, f"written into {g.name}'s margin")

    def _margin_values(self, g: Guarded, side: str) -> torch.Tensor:
        b = g.buffer
        return b[: g.margin] if side == "before" else b[g.margin + g.span :]

    def _reads_in(self, out: list[torch.Tensor]) -> Iterator[dict]:
        for i, o in enumerate(out):
            yield from self._payload_reads(o.detach().reshape(-1), f"in output {i}")

    def _payload_reads(self, values: torch.Tensor, where: str) -> Iterator[dict]:
        """Values holding a guard's margin payload: reads past that tensor's end or start."""
        if not values.is_floating_point() or tensors.nan_bits(values.dtype, 0) is None:
            return
        nan = torch.isnan(values)
        if not bool(nan.any()):
            return
        payload = tensors.nan_payload(values)
        for side, payloads in (("before", tensors.GUARD_BEFORE), ("after", tensors.GUARD_AFTER)):
            for k, p in enumerate(payloads):
                n = int((nan & (payload == p)).sum())
                owners = [g for g in self.guards if g.index % len(payloads) == k]
                if n and owners:
                    name = " or ".join(g.name for g in owners)
                    yield access.record(
                        "read", "guards", name, n, side=side,
                        via=f"{n} value{'s' * (n != 1)} from its margin {where}",
                    )  # fmt: skip

    # ---- names and lines ----------------------------------------------------------------------

    def _name_of(self, t: torch.Tensor) -> str | None:
        g = self._guard_of(t)
        return g.name if g else None

    def _guard_of(self, t: torch.Tensor) -> Guarded | None:
        ptr = t.untyped_storage().data_ptr()
        return next((g for g in self.guards if g.buffer.untyped_storage().data_ptr() == ptr), None)

    def _name_outputs(self, out: list[torch.Tensor]) -> dict[str, str]:
        """Guarded buffers the launcher returned are outputs: named so, from here on."""
        renames = {}
        for i, o in enumerate(out):
            g = self._guard_of(o)
            if g is not None and g.index >= self.inputs:
                renames[g.name] = f"output {i}"
                g.name = f"output {i}"
        return renames

    def _place(self, r: dict) -> None:
        """The line of a guard's finding: the interpreter's record of the same access, else
        the one load or store (or one masked one) of the launch's TTIR that reaches it."""
        same = [s for s in self.seen if s["kind"] == r["kind"] and _names(s, r["tensor"])]
        if same:  # the same access: one record, under the interpreter's name for the tensor
            for k in ("tensor", "file", "line", "kernel", "offset", "extent", "farthest"):
                if same[0].get(k) is not None:
                    r[k] = same[0][k]
            return
        g = next((g for g in self.guards if g.name == r["tensor"]), None)
        ops = pointers.WRITES if r["kind"] == "write" else pointers.READS
        for launch in self.launches if g is not None else []:
            for ordinal, t in launch.tensors:
                if self._guard_of(t) is g and launch.ttir:
                    line, candidates = pointers.access_line(launch.ttir, ordinal, ops)
                    r["kernel"] = getattr(launch.fn, "__name__", None)
                    if line:
                        r.update(file=line[0], line=line[1])
                    elif candidates:
                        r["lines"] = sorted({k[1] for k in candidates})
                    return

    @contextmanager
    def _recorded_launches(self) -> Iterator[None]:
        """Record each launch's tensor arguments and compiled TTIR (JITFunction.run returns
        the compiled kernel)."""
        cls = compat.launcher_classes()["jit"]
        original = cls.run
        launches = self.launches

        def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
            kernel = original(fn, *args, **kwargs)
            named = [p.name for p in fn.params]
            values = [*args, *(kwargs[n] for n in named[len(args) :] if n in kwargs)]
            found = [v for v in values if isinstance(v, torch.Tensor)]
            asm = getattr(kernel, "asm", None) or {}
            launches.append(_Launch(fn, list(enumerate(found)), asm.get("ttir")))
            return kernel

        cls.run = run
        try:
            yield
        finally:
            cls.run = original


def _names(r: dict, tensor: str) -> bool:
    """Whether the interpreter's record `r` (labelled "param" or "param (name)") is of `tensor`."""
    label = str(r["tensor"])
    return label == tensor or label.endswith(f"({tensor})")


def _arg_names(kernel_fn: Any, count: int) -> list[str]:
    """kernel_fn's positional parameter names, else "input i"."""
    try:
        params = list(inspect.signature(kernel_fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [named[i] if i < len(named) else f"input {i}" for i in range(count)]
