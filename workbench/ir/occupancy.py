"""Theoretical occupancy from a kernel's resources and the arch's limits (pure arithmetic).

Follows the CUDA occupancy calculator (cuda_occupancy.h): registers are allocated per warp in
units of 256, warps are spread over 4 sub-partitions, shared memory in units of 128 bytes, and
every block also holds the 1 KB the driver reserves; the SM takes the largest carveout.
Checked against Nsight Compute's launch__occupancy_limit_* on an H100.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ArchLimits:
    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256
    """Registers per warp are rounded up to this."""
    sub_partitions: int = 4
    smem_per_sm: int = 0
    """Bytes at the largest carveout."""
    max_smem_per_block: int = 0
    """Bytes a block may opt in to (dynamic + static)."""
    smem_alloc_unit: int = 128
    smem_reserved_per_block: int = 1024
    max_threads_per_block: int = 1024


ARCHS: dict[int, ArchLimits] = {
    80: ArchLimits("sm_80", 64, 32, smem_per_sm=164 * 1024, max_smem_per_block=163 * 1024),
    86: ArchLimits("sm_86", 48, 16, smem_per_sm=100 * 1024, max_smem_per_block=99 * 1024),
    89: ArchLimits("sm_89", 48, 24, smem_per_sm=100 * 1024, max_smem_per_block=99 * 1024),
    90: ArchLimits("sm_90", 64, 32, smem_per_sm=228 * 1024, max_smem_per_block=227 * 1024),
    # Blackwell: data-centre parts keep Hopper's SM limits; consumer parts (sm_120) hold 48
    # warps and 128 KB of shared memory per SM, 99 KB a block (CUDA's per-capability table)
    100: ArchLimits("sm_100", 64, 32, smem_per_sm=228 * 1024, max_smem_per_block=227 * 1024),
    103: ArchLimits("sm_103", 64, 32, smem_per_sm=228 * 1024, max_smem_per_block=227 * 1024),
    120: ArchLimits("sm_120", 48, 32, smem_per_sm=128 * 1024, max_smem_per_block=99 * 1024),
}
LIMITERS = ("registers", "shared memory", "warps", "blocks")


def block_shared(arch: int, dynamic: int, static: int) -> int:
    """Shared memory a block holds: Triton's dynamic amount plus the driver-reserved 1 KB.

    For Triton kernels cuobjdump's static SHARED is either 0 or that same reserved kilobyte
    (Nsight Compute on an H100: static 0, driver 1024, for a cubin with SHARED:1024), so the
    larger of the two is counted, once. This is ncu's launch__shared_mem_per_block.
    """
    lim = ARCHS.get(arch)
    reserved = lim.smem_reserved_per_block if lim else 1024
    return dynamic + max(static, reserved)


DEFAULT_ARCH = 90
"""The arch `ir`, `resources` and `sweep` compile for on a machine without a GPU (sm_90, the
H100's), when no --arch is given."""


def parse_arch(text: str | int) -> int:
    """'sm_90', 'sm90', '90', 'sm_90a' or 90 -> 90."""
    s = str(text).lower().removeprefix("sm").lstrip("_").rstrip("a")
    if not s.isdigit():
        raise ValueError(f"not an arch: {text!r} (expected e.g. sm_90)")
    return int(s)


@dataclass(frozen=True)
class Occupancy:
    arch: str
    warps_per_block: int
    blocks_per_sm: int
    active_warps: int
    max_warps: int
    percent: float
    limiter: str
    """The resource that allows the fewest blocks (first of LIMITERS on a tie); "launch" when
    the block cannot run at all."""
    block_limits: dict[str, int]
    """Blocks per SM each resource allows: the figures ncu reports as
    launch__occupancy_limit_{registers,shared_mem,warps,blocks}."""
    regs_per_thread: int
    smem_per_block: int
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(arch: int, regs_per_thread: int, num_warps: int, smem_per_block: int) -> Occupancy:
    """Blocks and warps one SM holds at once for a kernel with these resources.

    `smem_per_block` is what a block holds, the reserved kilobyte included (block_shared)."""
    lim = ARCHS.get(arch)
    if lim is None:
        known = ", ".join(a.name for a in ARCHS.values())
        raise ValueError(f"no occupancy limits for sm_{arch}; known: {known}")
    regs_per_warp = _round_up(max(regs_per_thread, 1) * 32, lim.reg_alloc_unit)
    regs_per_block = regs_per_warp * num_warps
    assumed = regs_per_warp * _round_up(num_warps, lim.sub_partitions)  # the hardware's check
    reason = ""
    if regs_per_thread > lim.max_regs_per_thread:
        reason = f"{regs_per_thread} registers/thread > {lim.max_regs_per_thread}"
    elif max(assumed, regs_per_block) > lim.regs_per_block:
        reason = f"{max(assumed, regs_per_block)} registers/block > {lim.regs_per_block}"
    if reason:
        by_regs = 0
    else:
        warps_per_partition = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
        by_regs = warps_per_partition * lim.sub_partitions // num_warps
    smem_alloc = _round_up(max(smem_per_block, lim.smem_reserved_per_block), lim.smem_alloc_unit)
    usable = smem_per_block - lim.smem_reserved_per_block
    if usable > lim.max_smem_per_block:
        by_smem = 0
        reason = reason or f"{usable} bytes shared/block > {lim.max_smem_per_block}"
    else:
        by_smem = lim.smem_per_sm // smem_alloc
    if num_warps * 32 > lim.max_threads_per_block:
        reason = reason or f"{num_warps * 32} threads/block > {lim.max_threads_per_block}"
    limits = {
        "registers": by_regs,
        "shared memory": by_smem,
        "warps": lim.max_warps_per_sm // num_warps,
        "blocks": lim.max_blocks_per_sm,
    }
    blocks = 0 if reason else min(limits.values())
    limiter = "launch" if reason else next(k for k in LIMITERS if limits[k] == blocks)
    active = blocks * num_warps
    return Occupancy(
        arch=lim.name,
        warps_per_block=num_warps,
        blocks_per_sm=blocks,
        active_warps=active,
        max_warps=lim.max_warps_per_sm,
        percent=round(100.0 * active / lim.max_warps_per_sm, 1),
        limiter=limiter,
        block_limits=limits,
        regs_per_thread=regs_per_thread,
        smem_per_block=smem_per_block,
        reason=reason,
    )
