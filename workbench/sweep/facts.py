"""What the static model (`sweep.model`) reads beyond a config's compile: the GPU's SM count and
the ridge of its measured ceilings, and per shape the kernel's integer arguments, the FLOPs of
its reference and its inputs' element size (child side: imports torch)."""

from __future__ import annotations

from typing import Any

from workbench.bench import ceilings, work
from workbench.catalog.spec import ELSIZE, KernelSpec, Shape
from workbench.ir.capture import Launch
from workbench.runtime import tensors


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


def problem(launch: Launch, dtype: str | None, flops: float | None) -> dict:
    """The kernel's integer arguments by name, the reference's FLOPs (`flops`, None until
    counted) and the element size of the launch's floating tensors (the dtype's, for a launch
    whose operands are TMA descriptors)."""
    import torch

    fixed = launch.constexprs()
    arguments = launch.arguments()
    sizes = {k: v for k, v in arguments.items() if type(v) is int and k not in fixed}
    floating = [
        a for a in arguments.values() if isinstance(a, torch.Tensor) and a.is_floating_point()
    ]
    elsize = floating[0].element_size() if floating else ELSIZE.get(dtype or "", 2)
    return {"sizes": sizes, "flops": flops, "elsize": elsize}


def formula_flops(spec: KernelSpec, shape: Shape) -> float | None:
    """The spec's FLOP formula at `shape`; None without one (they must be counted)."""
    return float(spec.flops(shape)) if spec.flops else None


def counted_flops(spec: KernelSpec, shape: Shape, dtype: str | None) -> float | None:
    """The reference's FLOPs at `shape`, counted on meta inputs; None where the inputs cannot be
    made there (the reference is not run for real just for this). A process's first use of the
    meta device imports PyTorch's reference operators (6.5 s on the GPU host), so the sweep
    counts in a compile worker, beside the work (`pool.CompilePool.count_flops`)."""
    tdtype = tensors.torch_dtype(dtype) if dtype else None
    try:
        args = tuple(tensors.sizes_on_meta(lambda d: spec.make_inputs(shape, tdtype, d), "meta"))
    except Exception:  # noqa: BLE001 - inputs that read values cannot be made on meta
        return None
    if not all(a.is_meta for a in args if hasattr(a, "is_meta")):
        return None
    return work.count(spec.reference_fn, args)[0]
