"""A static performance model of a sweep's configs (pure): what each config costs by its numbers
alone (tile shape, grid, blocks per SM, pipeline depth), so that a loser is explained by the
model's reason where the model predicts its slowdown, and left to a profile only where it cannot.

GEMM tiles (block parameters for M, N and K, and a reference that does matmul FLOPs): a BM x BN
output tile with its K loop does 2*BM*BN*K FLOPs and loads (BM+BN)*K elements, so its intensity,
2*BM*BN / ((BM+BN)*elsize) FLOP/B, is fixed by the tile's shape. A tile's time is its compute at
peak plus its loads at DRAM bandwidth, summed: in units of the compute, 1 + ridge/intensity. A
pointer GEMM's K loop overlaps the two only in part; the sum matches the recorded H100 and H200
sweeps (4096^3 bf16) within about 20 % where a max() of the two overstates every small tile.
The loads hide their latency only with IN_FLIGHT bytes on their way per SM: each resident block
keeps num_stages-1 K steps of (BM+BN)*BK elements ahead; below that the load part stretches.

Waves (any kernel whose tiles or programs are known): blocks run in waves of SMs x blocks per
SM. Resident blocks share their SM, so a wave costs as many block times as its busiest SM
holds blocks: a full wave blocks-per-SM, a partial last one ceil(left/SMs). With one block per
SM, a last wave 10 % full costs as much as a full one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench.catalog.spec import ELSIZE
from workbench.ir.config import block_axis
from workbench.sweep.row import SweepRow

DEFAULT_SMS = 132
"""An H100 SXM's (and an H200's) SMs: the count where the sweep's GPU did not record its own."""
IN_FLIGHT = 64 * 1024
"""Bytes of loads on their way per SM that hide their latency (Little's law: the ~75 B/ns per SM
that the recorded H100 sweep's tiles load at, times a load latency under load near 850 ns). On
the H100 and H200 the 3-stage BK=32 tiles with 48 KiB in flight ran 1.3x behind their 4-stage
twins (72 KiB), and every tile with 64 KiB or more kept up with its bigger-stage twin."""
SLOWER = 1.03
"""A factor under 3 % is not named as a reason (timings closer than 2 % are not told apart)."""
SIMILAR = 2.0
"""The model explains a slowdown when its prediction and the measurement agree within this
factor on the log scale (+20 % predicted for +10 % to +44 % measured)."""
PUBLISHED = {
    "H200": ({"16-bit": 989.4, "tf32": 494.7, "fp8": 1979.0}, 4800.0),
    "H100": ({"16-bit": 989.4, "tf32": 494.7, "fp8": 1979.0}, 3350.0),
}
"""Dense tensor-core TFLOP/s and HBM GB/s from NVIDIA's datasheets (SXM parts): the ridge when
the sweep's GPU had no measured ceilings. Any other GPU is read as an H100."""


@dataclass(frozen=True)
class Device:
    sms: int
    ridge: float
    """FLOP/B at which the dtype's matmul peak and DRAM bandwidth meet."""
    source: str


@dataclass(frozen=True)
class Problem:
    """What the sweep knows of one shape: the kernel's integer arguments by name, the FLOPs of
    the reference (None where not counted) and the element size of its inputs."""

    sizes: dict[str, int]
    flops: float | None
    elsize: int


@dataclass(frozen=True)
class Estimate:
    """One config by the model: its time in arbitrary units (comparable within a shape) and
    the figures behind it."""

    time: float
    tiles: int
    slots: int
    """Blocks in one wave: SMs x blocks per SM."""
    blocks_per_sm: int
    wave_cost: float
    """Blocks the busiest SM runs, over the blocks it would run were they spread evenly (>= 1)."""
    tile: tuple[int, int] | None = None
    """BM x BN of a GEMM tile; None where only the grid is modelled."""
    intensity: float | None = None
    ridge: float | None = None
    in_flight: int | None = None
    """Bytes of loads on their way per SM: blocks per SM x stages ahead x bytes per stage."""
    ahead: int = 0
    """K steps each block loads ahead of its dot (num_stages - 1, at least one)."""
    stage_bytes: int = 0
    starve: float = 1.0
    """How much the loads stretch for too few bytes in flight (>= 1)."""
    padding: float = 1.0
    """The tiles' area over the output's (>= 1)."""
    limiter: str = ""
    smem: int = 0

    @property
    def waves(self) -> float:
        return self.tiles / self.slots


@dataclass(frozen=True)
class Reason:
    """Why a config is slower: a few words for a narrow table, and the sentence."""

    tag: str
    text: str


@dataclass(frozen=True)
class Prediction:
    """A config's modelled time over the best's, and the factors that make it slower."""

    ratio: float
    reasons: tuple[Reason, ...]
    tiled: bool
    """A GEMM tile's model, which weighs blocks per SM itself (waves, loads in flight)."""

    def explains(self, measured: float) -> bool:
        """Slower in the model too, by a similar amount."""
        if self.ratio < SLOWER or measured <= 1.0:
            return False
        return 1 / SIMILAR <= math.log(self.ratio) / math.log(measured) <= SIMILAR


def device(gpu: str | None, dtype: str | None, recorded: dict | None = None) -> Device:
    """The recorded SM count and ridge (the job's measured ceilings), else the published ones."""
    if recorded and recorded.get("ridge"):
        return Device(
            int(recorded.get("sms") or DEFAULT_SMS), recorded["ridge"], recorded["source"]
        )
    name = next((k for k in PUBLISHED if k in (gpu or "")), "H100")
    tflops, gbps = PUBLISHED[name]
    rate = tflops[peak_kind(dtype)]
    source = f"{name} datasheet: {rate:g} TFLOP/s over {gbps / 1000:g} TB/s"
    sms = int((recorded or {}).get("sms") or DEFAULT_SMS)
    return Device(sms, rate * 1e12 / (gbps * 1e9), source)


def peak_kind(dtype: str | None) -> str:
    """Which tensor-core peak a dtype's tl.dot runs at (float32 in TF32, Triton's default)."""
    if dtype and dtype.startswith("float8"):
        return "fp8"
    return "tf32" if dtype == "float32" else "16-bit"


def problem(recorded: dict | None, shape: list[int], dtype: str | None) -> Problem:
    """A shape's recorded facts; a sweep recorded without them gives its shape as M, N, K when
    it has three sizes (the library's matmuls name theirs so)."""
    recorded = recorded or {}
    sizes = recorded.get("sizes") or (dict(zip("MNK", shape)) if len(shape) == 3 else {})
    elsize = recorded.get("elsize") or ELSIZE.get(dtype or "", 2)
    return Problem(dict(sizes), recorded.get("flops"), int(elsize))


def gemm_blocks(values: dict) -> dict[str, int] | None:
    """BM, BN, BK of a config with a block parameter for each of M, N and K (BLOCK_M,
    BLOCK_SIZE_M, BM, TILE_M...), else None."""
    found = {}
    for name, value in values.items():
        axis = block_axis(name)
        if axis in ("M", "N", "K") and type(value) is int and value > 0:
            found[axis] = value
    return found if len(found) == 3 else None


def gemm_dims(prob: Problem, blocks: dict[str, int] | None) -> tuple[int, int, int, int] | None:
    """(M, N, K, batch) when the config tiles a matmul: block parameters for M, N and K, sizes
    named M, N and K, and a reference whose FLOPs are 2*M*N*K per batch (a dot: a reference
    without matmul FLOPs is not a GEMM, whatever its parameters are called)."""
    if blocks is None:
        return None
    sizes = {k.upper(): v for k, v in prob.sizes.items() if type(v) is int}
    if not all(sizes.get(r, 0) > 0 for r in "MNK"):
        return None
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    if prob.flops is None:
        return m, n, k, 1
    batch = prob.flops / (2 * m * n * k)
    if batch < 0.99 or abs(batch - round(batch)) > 0.01:
        return None
    return m, n, k, round(batch)


def wave_cost(tiles: int, sms: int, per_sm: int) -> float:
    """Blocks on the busiest SM over tiles/SMs: full waves hold per_sm blocks on every SM, the
    last one ceil(left/SMs)."""
    full, left = divmod(tiles, sms * per_sm)
    busiest = full * per_sm + math.ceil(left / sms)
    return busiest / (tiles / sms)


def estimate(row: SweepRow, prob: Problem, dev: Device) -> Estimate | None:
    """The model of one compiled config: a GEMM tile's, else its grid's waves, else None."""
    values = row.get("values") or {}
    res = row.get("resources") or {}
    occ = res.get("occupancy") or {}
    per_sm = max(1, int(occ.get("blocks_per_sm") or 1))
    smem = int(res.get("shared_bytes") or 0)
    limiter = occ.get("limiter", "")
    blocks = gemm_blocks(values)
    dims = gemm_dims(prob, blocks)
    if dims is not None and blocks is not None:
        m, n, k, batch = dims
        bm, bn, bk = blocks["M"], blocks["N"], blocks["K"]
        tiles = math.ceil(m / bm) * math.ceil(n / bn) * batch
        intensity = 2 * bm * bn / ((bm + bn) * prob.elsize)
        ahead = max(1, int(values.get("num_stages", 3)) - 1)
        in_flight = per_sm * ahead * (bm + bn) * bk * prob.elsize
        starve = max(1.0, IN_FLIGHT / in_flight)
        padding = tiles * bm * bn / (m * n * batch)
        cost = wave_cost(tiles, dev.sms, per_sm)
        per_flop = 1 + dev.ridge / intensity * starve
        return Estimate(
            time=padding * cost * per_flop,
            tiles=tiles,
            slots=dev.sms * per_sm,
            blocks_per_sm=per_sm,
            wave_cost=cost,
            tile=(bm, bn),
            intensity=intensity,
            ridge=dev.ridge,
            in_flight=in_flight,
            ahead=ahead,
            stage_bytes=(bm + bn) * bk * prob.elsize,
            starve=starve,
            padding=padding,
            limiter=limiter,
            smem=smem,
        )
    programs = row.get("programs")
    if not programs:
        return None
    cost = wave_cost(programs, dev.sms, per_sm)
    return Estimate(cost, programs, dev.sms * per_sm, per_sm, cost, limiter=limiter, smem=smem)


def compare(est: Estimate, best: Estimate) -> Prediction:
    """`est`'s modelled time over `best`'s, with each factor that makes it slower said."""
    factors: list[tuple[float, Reason]] = []
    if est.intensity and best.intensity and est.ridge:
        tile = (1 + est.ridge / est.intensity) / (1 + est.ridge / best.intensity)
        factors.append((tile, _tile_reason(est, best)))
        stretch = (1 + est.ridge * est.starve / est.intensity) / (1 + est.ridge / est.intensity)
        best_stretch = (1 + est.ridge * best.starve / best.intensity) / (
            1 + est.ridge / best.intensity
        )
        factors.append((stretch / best_stretch, _pipeline_reason(est)))
        pad = f"tiles cover {est.padding:.2f}x the output"
        factors.append((est.padding / best.padding, Reason(pad.replace(" the output", ""), pad)))
    factors.append((est.wave_cost / best.wave_cost, _wave_reason(est)))
    factors.sort(key=lambda f: -f[0])
    reasons = tuple(reason for f, reason in factors if f >= SLOWER)
    return Prediction(est.time / best.time, reasons, est.tile is not None)


def _tile_reason(est: Estimate, best: Estimate) -> Reason:
    bm, bn = est.tile or (0, 0)
    side = "below" if (est.intensity or 0) < (est.ridge or 0) else "above"
    bound = "memory-bound" if side == "below" else "compute-bound"
    return Reason(
        f"tile {est.intensity:.0f} FLOP/B",
        f"tile intensity {est.intensity:.0f} FLOP/B ({bm}x{bn}) against the best's "
        f"{best.intensity:.0f}, {side} the ridge {est.ridge:.0f}: {bound} tile",
    )


def _pipeline_reason(est: Estimate) -> Reason:
    kib = f"{(est.in_flight or 0) / 1024:.0f} KiB"
    return Reason(
        f"{kib} in flight",
        f"{kib} of loads in flight per SM ({_blocks_text(est)} x {est.ahead} "
        f"stage{'s' if est.ahead > 1 else ''} of {est.stage_bytes / 1024:.0f} KiB ahead), under "
        f"the {IN_FLIGHT // 1024} KiB that hide their latency",
    )


def _wave_reason(est: Estimate) -> Reason:
    fill = est.waves - math.floor(est.waves)
    return Reason(
        f"{est.waves:.1f} waves",
        f"{est.waves:.1f} waves of {est.slots} blocks ({_blocks_text(est)}): "
        f"the last wave {1 - fill:.0%} empty",
    )


def _blocks_text(est: Estimate) -> str:
    text = f"{est.blocks_per_sm} block{'s' if est.blocks_per_sm > 1 else ''}/SM"
    if est.limiter == "shared memory" and est.smem:
        text += f" from {est.smem / 1024:.0f} KiB smem"
    return text
