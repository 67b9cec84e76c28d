"""The kernel contract: what a kernel module declares so the workbench can check, time and read it.

This module imports neither torch nor triton: kernel modules import it, and so does the CLI
process, which must stay light.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, ...]

DTYPES = ("float32", "float16", "bfloat16")
ELSIZE = {"float8_e4m3fn": 1, "float8_e5m2": 1, "float16": 2, "bfloat16": 2, "float32": 4}
"""Bytes per element by dtype name, where no tensor is at hand to ask."""


@dataclass(frozen=True)
class Tolerance:
    """Element-wise `allclose` bounds plus a bound on the relative L2 error of the whole output."""

    atol: float
    rtol: float
    rel_l2: float


# The kernel-writing guide's table (fp32 1e-5, fp16 1e-3, bf16 1e-2), the L2 bounds above one
# rounding of the output dtype. The check judges by its calibrated rule (`check.rule`) instead;
# the error trend reads these L2 bounds as each dtype's scale of error.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(atol=1e-5, rtol=1e-5, rel_l2=1e-4),
    "float16": Tolerance(atol=1e-3, rtol=1e-3, rel_l2=5e-3),
    "bfloat16": Tolerance(atol=1e-2, rtol=1e-2, rel_l2=2e-2),
}
# A float32 `tl.dot` runs in TF32 by default, and the reference in IEEE fp32: the guide's
# matmul row. 16-bit dots need no row, as the check's calibrated rule holds them to the
# reference's own error at their dtype.
MATMUL_TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(atol=1e-1, rtol=1e-2, rel_l2=2e-3),
}


@dataclass(frozen=True)
class KernelSpec:
    """One kernel (or workload) as the workbench sees it.

    Keep `name`, `dtypes`, `shapes`, `kind` and `description` literal in the source: `list`
    reads them without importing the module (and so without importing torch). Without a
    `description`, the first line of kernel_fn's docstring is the description, as long as
    kernel_fn is a function defined in the module.
    """

    name: str
    kernel_fn: Callable[..., Any]
    reference_fn: Callable[..., Any]
    make_inputs: Callable[[Shape, Any, str], tuple[Any, ...]]
    """(shape, torch dtype, device) -> the positional args of kernel_fn and reference_fn."""
    shapes: Mapping[str, Sequence[Shape]]
    """Shape sets by name. "check" is what `check` runs; "bench" is what `bench` times."""
    dtypes: tuple[str, ...] = DTYPES
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    """Per-dtype tolerances that replace the check's calibrated rule for that dtype."""
    flops: Callable[[Shape], float] | None = None
    """shape -> the FLOPs of one call. Without it, `bench` counts the reference's (matmuls,
    convolutions, attention) with torch's FlopCounterMode."""
    bytes_moved: Callable[[Shape, int], float] | None = None
    """(shape, element size in bytes) -> the fewest bytes a launch must move through DRAM.
    Without it, `bench` takes the tensor inputs plus the outputs of the reference."""
    jit: tuple[Any, ...] = ()
    """The @triton.jit / @triton.autotune objects kernel_fn launches (for IR, resources, sweep)."""
    nvtx: str = ""
    compile_mode: str = "default"
    """The `torch.compile` mode that `bench` compares against (e.g. "max-autotune")."""
    noncontig: bool = True
    """Also check each shape with strided (non-contiguous) copies of the tensor inputs."""
    kind: str = "kernel"
    """"kernel", or "workload" for an end-to-end program built from kernels."""
    description: str = ""

    def __post_init__(self) -> None:
        if not self.description and inspect.isfunction(self.kernel_fn):
            # frozen: set once, here, as the generated __init__ sets the other fields
            object.__setattr__(self, "description", summary(self.kernel_fn.__doc__))

    @property
    def range_name(self) -> str:
        return self.nvtx or self.name

    def shape_set(self, name: str) -> list[Shape]:
        if name in self.shapes:
            return [tuple(s) for s in self.shapes[name]]
        raise KeyError(f"{self.name} has no shape set {name!r}; it has {sorted(self.shapes)}")


def summary(doc: str | None) -> str:
    """The first line of a docstring, less a closing period: what a kernel or module says it
    is, as the kernel list shows it."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    return lines[0].removesuffix(".") if lines else ""
