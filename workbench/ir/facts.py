"""What a compile tells about a kernel, typed, for whoever judges it: each config that compiled
(resources, TTIR and its line map, values), the sources launched and the check's shapes.

Pure (no triton): the ir job fills these in the child; the diagnosis reads them there
(`diagnosis.ir_job`), so the IR stage itself makes no finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workbench.ir.linemap import Key, StageMap
from workbench.ir.resources import Resources

Source = tuple[str, str, int]
"""A function's source, its file and its first line."""


@dataclass(frozen=True)
class Compiled:
    """One compiled config."""

    label: str
    where: Key
    """The kernel's file and the line of its `def`."""
    resources: Resources
    ttir: str
    ttir_map: StageMap
    values: dict[str, Any]
    """Its constexprs and compile options: the smallest power-of-two tile finds partial tiles."""
    tuned: bool = False
    """One of an autotuner's candidates: the autotuner times them all and runs the fastest."""


@dataclass(frozen=True)
class CompileFacts:
    """One ir job's compiles and what they came from."""

    compiled: list[Compiled]
    """The configs that compiled (a failed one has no facts, only its error)."""
    kernel_sources: list[Source]
    """Each distinct @triton.jit function launched."""
    wrapper_sources: list[Source]
    """kernel_fn and the module-level functions it calls by name."""
    shapes: list[tuple[int, ...]]
    """The check's shapes (not the bench's): where partial tiles are tried."""


def irregular_shapes(shapes: Iterable[tuple[int, ...]], block: int = 16) -> list[tuple[int, ...]]:
    """Shapes with a dimension that is not a multiple of `block` (the smallest tile)."""
    return [tuple(s) for s in shapes if any(int(d) % block for d in s)]
