"""Per-kernel resources (registers, spills, shared memory) and their occupancy; pure functions.

Registers and the local-memory stack come from `cuobjdump --dump-resource-usage` on the cubin,
which works without a GPU. Shared memory is the dynamic amount Triton requests at launch
(`metadata.shared`) plus the driver-reserved kilobyte, which the cubin's `SHARED:` shows when a
kernel uses it (occupancy.block_shared). On a GPU the driver's figures after loading (`n_regs`,
and `n_spills` = local bytes per thread / 4) are the ones to check against.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from workbench.ir.occupancy import ARCHS, Occupancy, block_shared, occupancy

_FUNCTION = re.compile(r"^\s*Function\s+([^:\s]+)\s*:\s*$")
_PAIR = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """cuobjdump --dump-resource-usage output -> {function: {"REG": 26, "STACK": 0, ...}}."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            current = m.group(1)
            continue
        pairs = _PAIR.findall(line)
        if current and pairs:
            out.setdefault(current, {}).update({k: int(v) for k, v in pairs})
    return out


@dataclass(frozen=True)
class Resources:
    kernel: str
    arch: int
    regs: int
    """Registers per thread."""
    stack_bytes: int
    local_bytes: int
    static_shared: int
    dynamic_shared: int
    num_warps: int
    num_stages: int
    occupancy: Occupancy | None = None

    @property
    def spill_bytes(self) -> int:
        """Local memory per thread: what Triton's n_spills counts (divided by 4)."""
        return self.stack_bytes + self.local_bytes

    @property
    def shared_bytes(self) -> int:
        """What a block holds (ncu's launch__shared_mem_per_block)."""
        return block_shared(self.arch, self.dynamic_shared, self.static_shared)

    @property
    def n_spills(self) -> int:
        return self.spill_bytes // 4

    def to_dict(self) -> dict:
        d = asdict(self)
        d["occupancy"] = self.occupancy.to_dict() if self.occupancy else None
        d.update(
            spill_bytes=self.spill_bytes, shared_bytes=self.shared_bytes, n_spills=self.n_spills
        )
        return d


def resources(
    kernel: str,
    arch: int,
    usage: dict[str, int],
    dynamic_shared: int,
    num_warps: int,
    num_stages: int,
) -> Resources:
    """Combine one function's resource usage with the launch's shared memory and warps."""
    regs = usage.get("REG", 0)
    static = usage.get("SHARED", 0)
    occ = None
    if arch in ARCHS:
        occ = occupancy(arch, regs, num_warps, block_shared(arch, dynamic_shared, static))
    return Resources(
        kernel=kernel,
        arch=arch,
        regs=regs,
        stack_bytes=usage.get("STACK", 0),
        local_bytes=usage.get("LOCAL", 0),
        static_shared=static,
        dynamic_shared=dynamic_shared,
        num_warps=num_warps,
        num_stages=num_stages,
        occupancy=occ,
    )


def agreement(predicted: Resources, n_regs: int, n_spills: int) -> dict:
    """How the static figures compare with the driver's after loading the same cubin."""
    return {
        "n_regs": n_regs,
        "n_spills": n_spills,
        "predicted_regs": predicted.regs,
        "predicted_spills": predicted.n_spills,
        "regs_match": n_regs == predicted.regs,
        "spills_match": n_spills == predicted.n_spills,
        "regs_diff": n_regs - predicted.regs,
        "spills_diff": n_spills - predicted.n_spills,
    }
