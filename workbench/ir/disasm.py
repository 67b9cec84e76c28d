"""The CUDA binary tools inside the triton wheel, run on a compiled kernel's cubin: `nvdisasm`
for SASS, `cuobjdump` for the resource usage the occupancy is read from."""

from __future__ import annotations

import subprocess
from typing import Any

from workbench.ir import resources
from workbench.runtime import compat
from workbench.runtime.errors import fail


def run_tool(name: str, *args: str) -> str:
    path = compat.tool_path(name)
    proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise fail(
            "tool-failed",
            f"{name} {' '.join(args)} exited with {proc.returncode}",
            f"run it by hand to see why: {path} {' '.join(args)}",
            detail=proc.stderr[-2000:],
        )
    return proc.stdout


def sass(cubin: str) -> str:
    return run_tool("nvdisasm", "-c", "-gi", cubin)


def kernel_resources(kernel: Any, arch: int, cubin: str) -> resources.Resources:
    """Registers, spills, shared memory and occupancy of a compiled kernel, from its cubin."""
    usage = resources.parse_resource_usage(run_tool("cuobjdump", "--dump-resource-usage", cubin))
    md = kernel.metadata
    if md.name not in usage:
        raise fail(
            "no-resource-usage",
            f"cuobjdump printed no resource usage for {md.name} in {cubin}",
            "check that the cubin was written completely; run cuobjdump on it by hand",
        )
    return resources.resources(
        md.name, arch, usage[md.name], compat.shared_bytes(md), md.num_warps, md.num_stages
    )
