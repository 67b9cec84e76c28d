"""The pitfall table as data: one frozen record per pitfall, read by the detectors.

A record says what the pitfall looks like (symptom), which `Facts` fields show it, the numbers
that decide it (each named, with why), the fix as a `str.format` template over the finding's
evidence, where the row comes from, and whether `diagnose --try` can apply the fix by itself.
Adding a pitfall is one record here, one detector registered under its id (`registry`), and its
test. Sources: seed 000 (pitfall table), seed 002 (error table, routing), seed 003 (wide rows,
launch configuration), NVIDIA's Nsight Compute rules (shared/notes/ncu-nsys.md section 9).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.bench.clock_rules import HELD_BACK
from workbench.check import verdict

KINDS = ("correctness", "error", "performance", "occupancy", "workload", "info")
"""correctness: wrong results; error: the kernel does not run; performance: time the kernel
itself loses, so its gain is capped by the roofline's headroom; occupancy: performance that
hides latency with resident warps, which does not apply near the roofline's ceiling (info
there); workload: time lost around the kernel (launches, host waits), not capped by the
kernel's roofline; info: a fact that asks for no change."""


@dataclass(frozen=True)
class Threshold:
    name: str
    value: float
    why: str


@dataclass(frozen=True)
class Pitfall:
    id: str
    title: str
    symptom: str
    kind: str
    facts: tuple[str, ...]
    """The `Facts` fields its detector reads."""
    fix: str
    """A str.format template over the finding's evidence (missing keys read as empty)."""
    reference: str
    fix_id: str | None = None
    """"config" (another config, num_warps, num_stages, maxnreg), "cuda-graph" (the workload
    captured in one CUDA graph), or None: only a person can apply the fix."""
    thresholds: tuple[Threshold, ...] = ()
    variants: Mapping[str, str] = field(default_factory=dict)
    """Fix templates per case (an occupancy limiter, a stall reason, an NVIDIA rule); `fix` is
    the template when no variant matches."""
    patterns: tuple[str, ...] = ()
    """Error rows: regular expressions over the error's message that identify it."""
    aliases: tuple[str, ...] = ()
    """Ids other tools give findings of this row (the cache doctor's)."""


def _t(name: str, value: float, why: str) -> Threshold:
    return Threshold(name, value, why)


SPILL_FIX = (
    "cut live registers: spread the tile over more warps (num_warps), a smaller tile or fewer "
    "accumulators, fewer num_stages, or cap registers with maxnreg"
)
BANK_CONFLICT_FIX = (
    "Triton swizzles the shared memory behind tl.dot itself; conflicts come from reductions and "
    "custom scratch layouts: pad the row stride or reduce along the contiguous axis"
)
LIMITER_FIXES = {
    "registers": "fewer registers per thread: a smaller tile per warp, more warps, or maxnreg",
    "shared memory": "less shared memory per block: fewer num_stages or smaller BLOCK_K tiles",
    "warps": "fewer warps per block so more blocks fit (num_warps)",
    "blocks": "more warps per block: the SM's block slots run out first",
    "barriers": "more warps per block: the SM's barrier slots run out first",
    "launch": "the block cannot run on this arch: cut registers, shared memory or warps",
}
GRID_FIX = (
    "launch more programs: smaller BLOCK sizes or a split reduction (split-K) so the grid covers "
    "every SM at least once"
)
TAIL_FIX = (
    "even out the work per program, or use a persistent grid (one program per SM looping over "
    "tiles) so no tail wave idles"
)
COALESCE_FIX = (
    "make the fastest-moving index the contiguous one (stride 1) in tl.load/tl.store, or "
    "transpose the operand once beforehand"
)
LATENCY_FIX = (
    "hide latency: more resident warps, more num_stages to pipeline the loads, fewer dependent "
    "loads per iteration"
)
RULE_FIXES = {
    "LaunchConfiguration": GRID_FIX,
    "AchievedOccupancy": TAIL_FIX,
    "IssueSlotUtilization": LATENCY_FIX,
    "CPIStall": LATENCY_FIX + "; local-memory stalls are spills (cut registers)",
    "MemoryCacheAccessPattern": "make the fastest-moving index the contiguous one in "
    "tl.load/tl.store; local-memory traffic here is register spill: cut registers",
    "UncoalescedGlobalAccess": COALESCE_FIX,
    "UncoalescedSharedAccess": BANK_CONFLICT_FIX,
    "SharedMemoryConflicts": BANK_CONFLICT_FIX,
    "ThreadDivergence": "keep branches uniform per warp: use tl.where over masks instead of "
    "data-dependent control flow",
    **{f"TheoreticalOccupancy:{k}": v for k, v in LIMITER_FIXES.items()},
}
OCCUPANCY_RULES = (
    "TheoreticalOccupancy",
    "AchievedOccupancy",
    "LaunchConfiguration",
    "IssueSlotUtilization",
    "CPIStall",
    "SOLBottleneck",
)
"""NVIDIA's rules whose remedy is more resident warps or programs to hide latency: near the
roofline's ceiling there is no latency left to hide, so they weigh as the occupancy rows do."""
NAN_FIX = (
    "guard divisions and logs with an epsilon, subtract the row max before exp, compute "
    "exp/log/sqrt in fp32, and accumulate in tl.float32 (fp16 overflows above 65504)"
)
GRAPH_FIX = (
    "capture the workload in one CUDA graph (torch.cuda.CUDAGraph, or torch.compile(mode="
    "'reduce-overhead')), or fuse the small kernels into fewer"
)
STALL_FIXES = {
    "long_scoreboard": "waiting on global or local memory: pipeline the loads (num_stages), load "
    "wider tiles per instruction; on local memory it is register spill",
    "barrier": "warps wait at a barrier for the slowest one: balance work per warp, fewer "
    "num_warps for reductions",
    "mio_throttle": "the shared-memory queue is full: fewer shared-memory round trips (reduce in "
    "registers), wider accesses",
    "short_scoreboard": "waiting on shared memory or special math (MUFU): fewer shared-memory "
    "round trips, exp2 instead of exp",
    "lg_throttle": "the global/local memory queue is full: fewer, wider memory instructions "
    "(larger contiguous tiles); on local memory it is register spill",
    "math_pipe_throttle": "a math pipe is saturated: the kernel is compute-bound on it; use tensor "
    "cores (tl.dot) or cheaper math",
    "wait": "fixed-latency dependencies: more independent work per warp (larger tiles)",
    "drain": "stores draining at exit: expected for a store-heavy kernel",
    "no_instruction": "instruction-cache misses: a smaller unrolled body (smaller constexpr loops)",
    "branch_resolving": "divergent branches: keep branches uniform per warp (tl.where)",
    "dispatch_stall": "dispatch stalls: rare; check for pipeline conflicts in the SASS",
    "membar": "memory barriers: fewer atomics or fences",
    "imc_miss": "constant-cache misses: fewer distinct scalar arguments read per iteration",
    "tex_throttle": "the texture pipe is full: fewer, wider loads",
    "warpgroup_arrive": "waiting for wgmma: the tensor-core pipeline, expected in a tl.dot loop",
}

OFF_BY_ONE_FIX = "compare offsets with < n, not <= n: offset n is one past the end (line {line})"
OOB_WRITE_FIX = (
    "mask the tl.store with the bounds of the tensor it writes (offsets < that tensor's size: "
    "the output's, not the input's) and size the grid with triton.cdiv"
)
OOB_READ_FIX = (
    "mask the tl.load with the bounds of the tensor it reads, shifted as its offsets are "
    "(offs + 1 < n for x[offs + 1]), and give other= for the lanes masked off"
)


PITFALLS: tuple[Pitfall, ...] = (
    # ---- seed 000: the pitfall table ------------------------------------------------------
    Pitfall(
        "no-boundary-mask",
        "missing boundary mask",
        "wrong or unwritten outputs, or out-of-bounds reads, only where a shape is not a "
        "multiple of BLOCK (the last, partial tile)",
        "correctness",
        ("check", "compile_findings"),
        "pass mask= (and other= for loads) to tl.{op} for the boundary tile: offsets < n covers "
        "the last, partial tile",
        "seed 000 'No boundary mask'; seed 002 'Diffs at boundaries'",
        variants={
            "grid": "launch triton.cdiv(n, {parameter}) programs, not n // {parameter}: the "
            "last, partial tile has none; then pass mask= (and other= for loads) to tl.{op} so "
            "that offsets < n stay in bounds"
        },
    ),
    Pitfall(
        "assumes-contiguous",
        "wrong stride order / assumes contiguous inputs",
        "right on contiguous inputs, wrong on non-contiguous views of the same shapes",
        "correctness",
        ("check",),
        "pass the strides (x.stride(0), x.stride(1)) in the order the kernel multiplies them and "
        "use them in the pointer arithmetic, or call .contiguous() on the inputs in the wrapper",
        "seed 000 'Wrong stride argument order'",
    ),
    Pitfall(
        "accumulating-low-precision",
        "accumulating in bf16/fp16",
        "the error grows with the reduction length (K); large-K matmuls go visibly wrong",
        "correctness",
        ("compile_findings", "check"),
        "accumulate in fp32 (tl.zeros(..., dtype=tl.float32) or out_dtype=tl.float32) and cast "
        "once at the store",
        "seed 000 'Accumulating in bf16'; seed 002 precision rules",
        thresholds=(
            _t(
                "growth",
                verdict.TREND_MIN_GROWTH,
                "relative L2 error at the largest size over that at the smallest (the check's "
                "error_trend): rounding the output to its dtype gives an error that does not "
                "depend on K and fp32 accumulation stays far below it, while a low-precision "
                "accumulator adds one rounding per step",
            ),
            _t(
                "span",
                verdict.TREND_MIN_SPAN,
                "the largest size over the smallest: over less, a trend is within the spread of "
                "random inputs",
            ),
        ),
    ),
    Pitfall(
        "forgot-constexpr",
        "forgot tl.constexpr",
        "tile sizes are runtime values: the compiler cannot vectorize or unroll",
        "performance",
        ("compile_findings",),
        "annotate it: {parameter}: tl.constexpr",
        "seed 000 'Forgot tl.constexpr'",
    ),
    Pitfall(
        "register-spill",
        "register spill",
        "registers spill to local memory; achieved occupancy < 25 %, 'No Eligible' stalls",
        "performance",
        ("compile_findings", "configs", "ncu"),
        SPILL_FIX,
        "seed 000 'Register spill'; NVIDIA MemoryCacheAccessPattern (local)",
        fix_id="config",
        variants={"alternatives": SPILL_FIX + "; configs that do not spill: {try}"},
        thresholds=(
            _t(
                "spill_bytes",
                0,
                "any local memory per thread: every spilled value is a round trip through L1/L2",
            ),
            _t("alternatives", 5, "configs named in the finding, fastest (or fullest) first"),
        ),
    ),
    Pitfall(
        "smem-bank-conflicts",
        "shared-memory bank conflicts",
        "SM throughput far below peak in reductions or custom shared-memory scratch",
        "performance",
        ("ncu",),
        BANK_CONFLICT_FIX,
        "seed 000 'SMEM bank conflicts'; NVIDIA SharedMemoryConflicts",
        thresholds=(
            _t(
                "ratio",
                0.10,
                "conflicts per shared wavefront (loads and stores apart), the threshold of "
                "NVIDIA's SharedMemoryConflicts rule; each conflict is one replayed wavefront, "
                "so the ratio is the share of shared-memory cycles lost. '> 0' would flag every "
                "Triton reduction: the aggregate counters count conflicts the source view sees "
                "no excess for (the softmax fixture: 1.7 % / 2.0 %)",
            ),
        ),
    ),
    Pitfall(
        "autotune-stale",
        "autotune never re-runs",
        "a cached config (or binary) is stale after the kernel or its inputs changed",
        "correctness",
        ("cache",),
        "clear this kernel's cache (`cache clear NAME`) or add the changed argument to key=",
        "seed 000 'Autotune never re-runs'; seed 002 'Kernel not updating after edit'",
        aliases=(
            "autotune-non-key-args",
            "autotune-key-misses-loop-bound",
            "autotune-unknown-name",
            "global-constexpr-not-in-key",
            "autotune-served-stale",
            "autotune-key-too-narrow",
            "autotune-unreadable",
            "autotune-unreachable",
            "compile-unreached",
            "missing-binary",
            "corrupt-entry",
            "group-elsewhere",
            "other-triton",
            "leftover-tmp",
            "leftover-partial",
            "leftover-empty",
            "leftover-unreadable",
        ),
    ),
    Pitfall(
        "reduction-across-blocks",
        "cross-block atomic reduction",
        "tl.atomic_add across programs: results differ from run to run",
        "correctness",
        ("compile_findings", "check"),
        "reduce per block into a buffer, then combine in a second pass (two-pass reduction) for "
        "deterministic results",
        "seed 000 'Reduction across blocks'; seed 002 'Random diffs: race condition'",
    ),
    # ---- seed 002: the error table ----------------------------------------------------------
    Pitfall(
        "store-type-mismatch",
        "store type mismatch",
        "'Type mismatch, store Float32 to Float16' or 'cannot cast ... to ...' at a tl.store",
        "error",
        ("check",),
        "cast the value to the output's dtype before the store: "
        "tl.store(ptr, x.to(ptr.dtype.element_ty), mask=...)",
        "seed 002 error table",
        patterns=(r"[Tt]ype mismatch", r"cannot cast .+ to "),
    ),
    Pitfall(
        "tf32-mismatch",
        "TF32 vs IEEE",
        "an fp32 matmul off by TF32 rounding (rel. error 1e-4..1e-2) against an IEEE reference",
        "correctness",
        ("compile_findings", "check"),
        "tl.dot rounds fp32 inputs to TF32 by default, as torch.mm does with allow_tf32: compare "
        "against a TF32 reference, or pass input_precision='ieee' where exact fp32 matters "
        "(3-8x slower)",
        "seed 002 'Matmul ~0.01-0.1 abs diff vs reference: TF32 vs IEEE mismatch'",
        thresholds=(
            _t(
                "low",
                1e-4,
                "relative L2 below which fp32 rounding alone explains it (the fp32 tolerance)",
            ),
            _t(
                "high",
                2e-2,
                "TF32 keeps 10 mantissa bits (unit roundoff 4.9e-4): a K-long dot of random "
                "inputs lands near 1e-4..1e-3; wrong indexing gives errors of order 1",
            ),
        ),
    ),
    Pitfall(
        "fp32-dot-ieee",
        "fp32 tl.dot in IEEE precision",
        "an fp32 matmul 3-8x slower than expected",
        "performance",
        ("compile_findings",),
        "use input_precision='tf32' (or 'tf32x3' for more accuracy) where the tolerance allows",
        "seed 002 'Matmul 3-8x slower than expected: input_precision=\"ieee\"'",
    ),
    Pitfall(
        "c-integer-division",
        "C integer division",
        "mismatched results where // or % meets a negative operand (Triton rounds toward zero)",
        "correctness",
        ("compile_findings", "check"),
        "Triton's // and % round toward zero (C), Python's toward minus infinity: keep the "
        "operands non-negative, or use (i % n + n) % n",
        "seed 002 'C integer division semantics'",
    ),
    Pitfall(
        "nan-inf",
        "NaN/Inf",
        "the kernel makes NaN or Inf where the reference is finite, on its own contiguous inputs "
        "with every output written and nothing read past an input (elsewhere they are the "
        "evidence of that tail or layout)",
        "correctness",
        ("check",),
        NAN_FIX,
        "seed 002 'NaN/Inf: division by zero or fp16 overflow'",
        variants={
            "float16": NAN_FIX + "; only float16 cases have them: it overflows above 65504, so "
            "compute in fp32 and cast once at the store"
        },
    ),
    Pitfall(
        "host-sync",
        "host sync in the wrapper",
        ".item(), .cpu(), .tolist() in the launch path: the host waits for the GPU (50-100 us)",
        "workload",
        ("compile_findings",),
        "keep values on the GPU (pass tensors, not Python numbers) or move the sync out of the "
        "timed path",
        "seed 002 'CPU-GPU sync avoidance'",
    ),
    Pitfall(
        "out-of-resources",
        "OutOfResources",
        "triton.OutOfResources: the config needs more shared memory or registers than the SM has",
        "error",
        ("check", "configs"),
        "lower BLOCK sizes or num_stages (shared memory), or the tile per warp (registers)",
        "seed 002 'triton.OutOfResources'",
        patterns=(r"OutOfResources", r"out of resource", r"out-of-resources"),
    ),
    Pitfall(
        "grid-not-tuple",
        "grid not a tuple",
        "'object of type int has no len()' (or 'grid must be a tuple') at the launch",
        "error",
        ("check",),
        "return a tuple from the grid, trailing comma included: (triton.cdiv(n, BLOCK),) or "
        "lambda meta: (triton.cdiv(n, meta['BLOCK']),)",
        "seed 002 'grid must be a tuple'",
        patterns=(r"object of type 'int' has no len\(\)", r"grid must be a tuple"),
    ),
    Pitfall(
        "arange-constexpr",
        "tl.arange needs constexpr",
        "'arange's arguments must be of type tl.constexpr' or 'arange's range must be a power "
        "of 2'",
        "error",
        ("check",),
        "give tl.arange compile-time bounds: annotate the size parameter `: tl.constexpr`, and "
        "make end - start a power of two (triton.next_power_of_2)",
        "seed 002 'expected constexpr in tl.arange'; 'BLOCK_SIZE is not a constexpr'",
        patterns=(
            r"arange's arguments must be of type tl\.constexpr",
            r"arange's range must be a power of 2",
            r"is not a constexpr",
            r"expected constexpr",
        ),
    ),
    Pitfall(
        "shape-mismatch",
        "shape mismatch in a binary op",
        "'Cannot make_shape_compatible: incompatible dimensions'",
        "error",
        ("check",),
        "broadcast explicitly with x[:, None] and y[None, :]; check the shapes with "
        "tl.static_print",
        "seed 002 'shape mismatch in binary op'",
        patterns=(r"make_shape_compatible", r"incompatible dimensions", r"shape mismatch"),
    ),
    Pitfall(
        "math-needs-fp32",
        "transcendental on fp16/bf16",
        "\"Expected dtype ['fp32', 'fp64'] but got fp16\" at tl.exp, tl.log, tl.math.erf ...",
        "error",
        ("check",),
        "cast to fp32 for the math and back for the store: tl.exp(x.to(tl.float32)).to(x.dtype)",
        "seed 002 'FP16/BF16 precision rules'",
        patterns=(r"Expected dtype \['fp32', 'fp64'\]",),
    ),
    Pitfall(
        "check-error",
        "the kernel raised an error",
        "an error the table has no row for",
        "error",
        ("check",),
        "{remedy}",
        "the check's own Problem (cause and remedy)",
    ),
    # ---- seed 003 -----------------------------------------------------------------------------
    Pitfall(
        "rows-wider-than-block",
        "rows wider than BLOCK",
        "right on narrow rows, wrong once a row is wider than one program's BLOCK",
        "correctness",
        ("check",),
        "loop over the row in BLOCK-wide chunks (a max pass, then a sum pass: online softmax), "
        "or pick BLOCK = triton.next_power_of_2(n_cols)",
        "seed 003 'Wide-row softmax: rows wider than BLOCK_SIZE'",
    ),
    Pitfall(
        "grid-too-small",
        "grid too small to fill the GPU / tail wave",
        "fewer programs than SMs, or a last wave that leaves most SMs idle",
        "occupancy",
        ("ncu",),
        GRID_FIX,
        "seed 003 'launching kernels: grid'; NVIDIA LaunchConfiguration, SOLBottleneck 'Small "
        "Grid'",
        thresholds=(
            _t(
                "idle",
                0.2,
                "share of the launch's SM time left idle (SMs without a program, or the empty "
                "part of the last wave); 20 % is NVIDIA's tail-effect threshold",
            ),
        ),
        variants={"tail": TAIL_FIX},
    ),
    # ---- profile rows --------------------------------------------------------------------------
    Pitfall(
        "low-occupancy",
        "occupancy limiter",
        "few warps resident per SM because registers, shared memory or block slots run out",
        "occupancy",
        ("compile_findings", "ncu"),
        "raise the per-SM limit that binds first",
        "NVIDIA TheoreticalOccupancy; seed 000 'Register spill: achieved occupancy < 25 %'",
        thresholds=(
            _t(
                "floor",
                50.0,
                "theoretical occupancy (%) under which a finding is raised at all; NVIDIA's rule "
                "says 80 %, which flags every big-tile matmul",
            ),
            _t(
                "achieved_floor",
                25.0,
                "achieved occupancy (%) under which the pitfall table calls occupancy low "
                "(seed 000, register spill row)",
            ),
            _t(
                "latency_bound",
                60.0,
                "SM and memory throughput (% of peak) both under this: latency-bound (NVIDIA's "
                "SOLBottleneck), the case where more resident warps pay off",
            ),
        ),
        variants=LIMITER_FIXES,
    ),
    Pitfall(
        "occupancy-gap",
        "achieved << theoretical occupancy",
        "fewer warps resident on average than the launch allows: uneven work or a tail",
        "occupancy",
        ("ncu",),
        TAIL_FIX,
        "NVIDIA AchievedOccupancy",
        thresholds=(
            _t(
                "fraction",
                2 / 3,
                "raised when fewer than this share of the theoretical warps are resident; "
                "NVIDIA's 10-point gap also flags a memory-bound kernel at 85 % of a 100 % "
                "theoretical (the vector_add fixture, at DRAM peak)",
            ),
        ),
    ),
    Pitfall(
        "stall-dominant",
        "one stall reason dominating",
        "most sampled warp stalls have one reason",
        "occupancy",
        ("ncu",),
        "remove the cause of {reason} stalls",
        "NVIDIA CPIStall, WarpStateStats",
        thresholds=(
            _t(
                "share",
                0.5,
                "share of the sampled stalls (issuing samples excluded) with one reason: then "
                "that reason is where the time goes",
            ),
        ),
        variants=STALL_FIXES,
    ),
    Pitfall(
        "uncoalesced-access",
        "uncoalesced global access",
        "more L2 sectors moved than the access needs: neighbouring lanes read far-apart addresses",
        "performance",
        ("ncu",),
        COALESCE_FIX + " (line {line})",
        "NVIDIA UncoalescedGlobalAccess; notes: 32 B per 128 B line halves the bandwidth",
        thresholds=(
            _t(
                "excess",
                0.25,
                "excess sectors over the ideal ones on the hot lines: a memory-bound kernel's "
                "time scales with the sectors it moves, so a quarter more is a quarter slower",
            ),
        ),
        variants={
            "unaligned": "the indices may be contiguous and the accesses still scalar: the "
            "length {length} is not a multiple of {vector} elements (16 bytes), so Triton cannot "
            "prove a masked access aligned and loads each lane's elements one at a time, lanes "
            "16 bytes apart (the SASS shows LDG.E, not LDG.E.128); pad the length to a multiple "
            "of {vector}, or launch the aligned bulk and the tail apart (line {line}). Else: "
            + COALESCE_FIX
        },
    ),
    Pitfall(
        "memory-far-from-peak",
        "memory-bound far from DRAM peak",
        "memory-bound, yet well under the bandwidth a copy reaches",
        "performance",
        ("bench", "ncu"),
        "move fewer bytes or move them faster: coalesced, wide loads (BLOCK >= 1024 elements per "
        "program for element-wise work), one pass over the data (fuse the passes, online "
        "reductions), enough programs in flight to cover every SM",
        "seed 003 'The 80-95 % rule'; notes/performance-anchors (floors 0.85-0.93 of copy)",
        thresholds=(
            _t(
                "ratio",
                0.6,
                "fraction of the measured copy bandwidth under which a memory-bound kernel has "
                "a structural problem, not tuning left: the library's floors are 0.85-0.93, the "
                "hardest (layer-norm backward, small-N softmax) 0.55",
            ),
        ),
    ),
    Pitfall(
        "launch-bound",
        "launch-bound",
        "the GPU idles between many small kernels while the host launches them",
        "workload",
        ("launch",),
        GRAPH_FIX,
        "seed 003 'CUDA Graphs: eliminating kernel launch overhead'; issue: 3.55 ms eager vs "
        "0.145 ms from one graph on the H100",
        fix_id="cuda-graph",
        thresholds=(
            _t(
                "idle",
                0.5,
                "share of one call's span the GPU sits idle: above half, the host's launches, "
                "not the kernels, set the pace",
            ),
            _t(
                "launches",
                2,
                "launches per call: idle time before a single launch is the launch itself, "
                "which a graph of one kernel does not remove",
            ),
            _t(
                "graph_gain",
                0.2,
                "time a graph replay saves over eager launches, when measured: under a fifth it "
                "is within what a person would not act on",
            ),
        ),
        variants={
            "graph-wrong": "fuse the small kernels into fewer: the graph replay's outputs were "
            "wrong here (an allocation or a host sync inside the captured call?)"
        },
    ),
    Pitfall(
        "ncu-rule",
        "Nsight Compute's own rule",
        "NVIDIA's rule with the largest estimated speedup, when none of ours says the same: "
        "info (its estimate bounds one unit's gain, and the top rule pointed away from where the "
        "time went on memory-bound kernels near DRAM peak); our rows, with Triton fixes, lead",
        "performance",
        ("ncu",),
        "ncu: {message}",
        "Nsight Compute rules (sections/*.py of ncu 2025.3)",
        variants=RULE_FIXES,
    ),
    Pitfall(
        "rng-stream",
        "same distribution, different RNG stream",
        "a stochastic kernel (dropout) whose random stream differs from the reference's: the "
        "elements differ, the keep rate and scaling match",
        "info",
        ("check",),
        "nothing to fix: compare keep rate and scaling, not elements, or draw both sides from "
        "one Philox stream (tl.rand with the reference's seed and offsets)",
        "seed 002 fused GELU + dropout example; issue 13",
    ),
    Pitfall(
        "rng-keep-rate",
        "stochastic kernel off in distribution",
        "a dropout-like kernel whose keep rate or kept-value scale differs from the reference's: "
        "not another stream, a wrong one",
        "correctness",
        ("check",),
        "keep an element with the reference's probability (1 - p), comparing the draw with p "
        "the way the reference does, and scale kept values by 1 / (1 - p)",
        "seed 002 fused GELU + dropout example (x / (1.0 - p)); check.stochastic",
        variants={
            "scale": "scale kept values by 1 / keep rate, the reference's factor: "
            "x / (1.0 - p), not x / p",
            "rate": "keep an element with the reference's probability (1 - p): compare the draw "
            "with p the way the reference does (tl.rand(seed, offs) > p)",
        },
    ),
    Pitfall(
        "clock-held-back",
        "SM clock held back while timed",
        "the GPU held the SM clock under its maximum for power or heat while the bench timed the "
        "kernel: a sustained timing (the bench's) runs slower than short ones (the sweep's "
        "batches, ncu's single launch) by as much as the clock dropped",
        "info",
        ("bench",),
        "nothing to fix in the timing: compare kernels by ratios timed in the same run (the "
        "speedup over torch), not by absolute times from timings of different lengths. A "
        "power-capped kernel goes faster by spending less energy per result: fewer instructions "
        "per FLOP (tensor-core dots, not scalar math; less index arithmetic, fewer conversions "
        "and exponentials in the inner loop) and fewer bytes moved",
        "NVML's clock-event reasons (nvmlDeviceGetCurrentClocksEventReasons) sampled while the "
        "bench times (bench.clocks); H100 flash attention: 1.96 ms by the bench at 1545 of "
        "1980 MHz and 652 W (power cap), 1.81 ms by the sweep's short batches, 1.80 ms by ncu",
        thresholds=(
            _t(
                "ratio",
                HELD_BACK,
                "median SM clock over its maximum under which, with a power or thermal reason "
                "seen, the clock was held back: at full boost it wanders a few percent with "
                "temperature; power-capped flash attention on the H100 ran at 0.78",
            ),
        ),
    ),
    # ---- memory accesses: guard regions, the interpreter's bounds, compute-sanitizer ---------
    Pitfall(
        "out-of-bounds-write",
        "write out of bounds",
        "a store lands past the end (or before the start) of the tensor it writes: outputs look "
        "right while a neighbouring allocation is corrupted",
        "correctness",
        ("check",),
        OOB_WRITE_FIX,
        "guard regions around every tensor (check.guards), the interpreter's bounds "
        "(check.bounds), compute-sanitizer memcheck 'Invalid __global__ write'",
        variants={"off-by-one": OFF_BY_ONE_FIX},
    ),
    Pitfall(
        "out-of-bounds-read",
        "read out of bounds",
        "a load reaches past the end (or before the start) of the tensor it reads: the value "
        "is whatever follows the allocation, often plausible",
        "correctness",
        ("check",),
        OOB_READ_FIX,
        "guard payloads in the outputs (check.guards), the interpreter's bounds "
        "(check.bounds), compute-sanitizer memcheck 'Invalid __global__ read'",
        variants={"off-by-one": OFF_BY_ONE_FIX},
    ),
    Pitfall(
        "off-by-one-mask",
        "off-by-one mask",
        "`offs <= n` where `offs < n` is meant: the lane at offset n, one past the end, loads "
        "or stores",
        "correctness",
        ("compile_findings", "check"),
        OFF_BY_ONE_FIX,
        "TTIR: arith.cmpi sle/ule of a tt.make_range against a size argument, feeding a "
        "load or store mask (diagnosis.masks)",
    ),
    Pitfall(
        "smem-race",
        "shared-memory race",
        "threads of a block write and read the same shared memory with no barrier between: the "
        "result depends on warp scheduling (compute-sanitizer racecheck; synccheck for barriers "
        "not reached by every thread)",
        "correctness",
        ("check",),
        "put a barrier between a thread's shared-memory write and other threads' reads of it "
        "(bar.sync 0 in hand-written PTX, tl.debug_barrier() between Triton steps), or move the "
        "data between threads with Triton ops (tl.reshape, tl.trans, reductions), which "
        "synchronise themselves (line {line})",
        "compute-sanitizer racecheck 'Race reported between Write access ... and Read access'",
        variants={
            "sync": "every thread of the block must reach each barrier, with the same "
            "arguments: no bar.sync under a condition that differs between threads (line {line})"
        },
    ),
    Pitfall(
        "serial-softmax",
        "softmax between two matrix multiplies, not overlapped (Hopper)",
        "a loop computes scores with tl.dot, exponentiates them, and multiplies the result by a "
        "second tile: each warp waits for its wgmma before the softmax and the tensor cores idle "
        "through it; a compute-bound kernel stays well under the matmul rate (attention at "
        "0.90-0.95x cuDNN's SDPA)",
        "performance",
        ("compile_findings",),
        "`tl` cannot overlap them on sm_90 (Triton 3.4-3.9 compile tl.range(..., "
        "warp_specialize=True) to the same code there): write the loop in Gluon with "
        "gl.warp_specialize, a TMA producer warp and consumer warpgroups on setmaxnreg budgets "
        "(two, or three where the second product is small: head_dim 64), each leaving the "
        "previous block's second product in flight while it runs the next softmax "
        "(kernels/_attention_ws.py: attention from 0.90-0.96x to 1.02-1.10x torch SDPA at "
        "head_dim 128 and 64 on an H100; line {line})",
        "FlashAttention-3 (warp specialization, intra-warpgroup overlap); docs/walkthrough.md "
        "steps 5-7",
    ),
    Pitfall(
        "uninitialised-read",
        "uninitialised read",
        "a kernel reads memory nothing wrote (an accumulator from torch.empty): results depend "
        "on what the allocator hands back, often the right answer of an earlier call",
        "correctness",
        ("check",),
        "write before reading: allocate what the kernel accumulates into with torch.zeros (or "
        "torch.full), not torch.empty, or store a first value before the first load (line "
        "{line})",
        "the interpreter's load of the poison of a fresh allocation (check.bounds), "
        "compute-sanitizer initcheck 'Uninitialized __global__ memory read'",
    ),
)

BY_ID: dict[str, Pitfall] = {p.id: p for p in PITFALLS}
_ALIASES = {a: p.id for p in PITFALLS for a in p.aliases}


def pitfall(id: str) -> Pitfall:
    """The row of a finding id (its own, or an id another tool gives the row)."""
    row = BY_ID.get(id) or BY_ID.get(_ALIASES.get(id, ""))
    if row is None:
        raise KeyError(f"no pitfall row for {id!r}: add a record to diagnosis.pitfalls.PITFALLS")
    return row


def known(id: str) -> bool:
    return id in BY_ID or id in _ALIASES


def limit(id: str, name: str) -> float:
    """A row's named threshold."""
    for t in pitfall(id).thresholds:
        if t.name == name:
            return t.value
    raise KeyError(f"pitfall {id!r} has no threshold {name!r}")


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


_FORMATTER = string.Formatter()


def fix_text(id: str, evidence: Mapping[str, Any] | None = None, variant: str | None = None) -> str:
    """The row's fix (or the variant's) with the evidence filled in."""
    row = pitfall(id)
    template = row.variants.get(variant, row.fix) if variant else row.fix
    return _FORMATTER.vformat(template, (), _Blank(evidence or {})).strip()
