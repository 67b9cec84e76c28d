"""What the static model (`sweep.model`) reads beyond a config's compile: the GPU's SM count and
the ridge of its measured ceilings, and per shape the kernel's integer arguments, the FLOPs of
its reference and its inputs' element size (child side: imports torch)."""

from __future__ import annotations

from typing import Any

from workbench.bench import ceilings, work
from workbench.catalog.spec import KernelSpec, Shape
from workbench.ir.capture import Launch
from workbench.runtime import tensors
from workbench.sweep import model


def device(gpu: bool, dtype: str | None) -> dict:
    """This GPU's SMs, and the ridge where a bench measured its ceilings (published figures
    otherwise: `model.device`); nothing without a GPU."""
    if not gpu:
        return {}
    import torch

    out: dict[str, Any] = {"sms": torch.cuda.get_device_properties(0).multi_processor_count}
    measured = ceilings.stored()
    if measured is not None:
        rate = measured.matmul_rate(dtype)
        out["ridge"] = rate * 1e12 / (measured.copy_gbps * 1e9)
        out["source"] = f"measured: {rate:g} TFLOP/s over {measured.copy_gbps:g} GB/s"
    return out


def problem(spec: KernelSpec, launch: Launch, shape: Shape, dtype: str | None, device: str) -> dict:
    """The kernel's integer arguments by name, the reference's FLOPs at `shape` (the spec's
    formula, else counted on meta inputs; None where the inputs cannot be made there: the
    reference is not run for real just for this) and the element size of its floating inputs."""
    fixed = launch.constexprs()
    sizes = {k: v for k, v in launch.arguments().items() if type(v) is int and k not in fixed}
    tdtype = tensors.torch_dtype(dtype) if dtype else None
    args = tuple(tensors.sizes_on_meta(lambda dev: spec.make_inputs(shape, tdtype, dev), device))
    floating = [a for a in args if hasattr(a, "is_floating_point") and a.is_floating_point()]
    elsize = floating[0].element_size() if floating else model.ELSIZE.get(dtype or "", 2)
    flops = None
    if spec.flops:
        flops = float(spec.flops(shape))
    elif all(a.is_meta for a in args if hasattr(a, "is_meta")):
        flops = work.count(spec.reference_fn, args)[0]
    return {"sizes": sizes, "flops": flops, "elsize": elsize}
