"""The "launches" job kind (child process): what kernel_fn launches for one input, each launch's
function name and grid, without compiling or running any of them."""

from __future__ import annotations

from typing import Any

from workbench.catalog.spec import KernelSpec
from workbench.ir.result import LaunchesResult, LaunchRow
from workbench.run.params import LaunchesParams


def job(spec: KernelSpec, params: LaunchesParams, ctx: Any) -> dict:
    from workbench.ir.capture import capture, compile_mode

    spec = compile_mode(spec, ctx.file)  # interpreted functions are not intercepted
    shape = tuple(params.shape) if params.shape else None
    found = capture(spec, ctx.device, params.dtype, shape)
    rows = [LaunchRow(x.name, x.programs(), x.tuned) for x in found]
    return LaunchesResult(spec.name, params.shape, params.dtype, rows).to_dict()
