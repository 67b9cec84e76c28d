"""GPU study: can the attention forward's softmax overlap its matrix multiplies on Hopper?

The library's TMA kernel (`kernels.attention._attn_fwd_tma`) issues q k^T, waits for every
wgmma in flight (`wgmma.wait_group 0`), runs the softmax, then issues p v: per KV block the
softmax (scale, exp2, convert, rescale) runs while the warpgroup's tensor-core work is idle.
Triton (3.6 to 3.9) waits right after a dot whose result the loop body uses, and leaves a dot
in flight only when its result is read by the next iteration after such a wait. Variants, each
its own kernel with a few fixed configs (no autotuning):

- `library`: the library's kernel itself at configs its autotuner does not try (256-row tiles
  on 16 warps: four warpgroups, whose softmaxes can run beside each other's MMAs).
- `pipelined`: the KV loop software-pipelined by hand (FlashAttention-3's intra-warpgroup
  overlap): block n's scores, then block n-1's p v left in flight, then block n's softmax while
  it runs; the rescale of the accumulator moves before p v.
- `halves`: two independent halves of the query tile per program (q0/q1, acc0/acc1). Triton
  waits after each half's scores, so the first half's softmax runs alone; the first half's p v
  stays in flight during the second half's softmax: half the softmax overlapped.

Every config is checked against torch SDPA by the library's own rule (`check.compare` with the
kernel's tolerances), then timed by the library's timing (do_bench, L2 flushed), with SDPA and
the library's `attention` re-timed between variants on the same inputs (ratios use their
medians). Configs that fail to compile or ask for more shared memory than the GPU has are
recorded with their error.

    python benchmarks/attention_variants.py [OUT.json]     # default $OUT/attention_variants.json
    TRITON_INTERPRET=1 python benchmarks/attention_variants.py --cpu-smoke /tmp/smoke.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import triton
import triton.language as tl
from _common import ROOT

sys.path.insert(0, str(ROOT))
from kernels import attention as A  # noqa: E402
from workbench.bench.timing import quantiles_ms  # noqa: E402
from workbench.check import exact  # noqa: E402
from workbench.check.compare import Reference  # noqa: E402
from workbench.check.result import CaseResult  # noqa: E402
from workbench.runtime import compat  # noqa: E402

Config = tuple[int, int, int, int]
"""(BLOCK_M, BLOCK_N, num_warps, num_stages)."""


@triton.jit
def _probs(qk, m_i, l_i, qk_scale):
    """Unmasked online-softmax update of one block of raw scores: (p, alpha, l, m)."""
    m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
    alpha = tl.math.exp2(m_i - m_ij)
    return p, alpha, l_i * alpha + tl.sum(p, 1), m_ij


@triton.jit
def _diagonal(
    acc, l_i, m_i, q, desc_k, desc_v, row0, offs_m, full, end, qk_scale, BLOCK_N: tl.constexpr
):
    """The causal diagonal blocks, masked, as the library steps through them."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(full, end, BLOCK_N):
        k = desc_k.load([row0 + start_n, 0])
        v = desc_v.load([row0 + start_n, 0])
        mask = offs_m[:, None] >= (start_n + offs_n)[None, :]
        acc, l_i, m_i = A._softmax_step(acc, l_i, m_i, q, k, v, qk_scale, mask, True)
    return acc, l_i, m_i


@triton.jit
def _fwd_pipelined(
    desc_q,
    desc_k,
    desc_v,
    desc_o,
    qk_scale,
    S,
    HEAD_DIM: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    if CAUSAL:
        start_m = tl.num_programs(0) - 1 - start_m
    row0 = tl.program_id(1) * S
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    full, end = A._block_ranges(start_m, S, BLOCK_M, BLOCK_N, CAUSAL)
    if full > 0:
        qk = tl.dot(q, desc_k.load([row0, 0]).T)
        p, alpha, l_i, m_i = _probs(qk, m_i, l_i, qk_scale)
        for start_n in range(BLOCK_N, full, BLOCK_N):
            start_n = tl.multiple_of(start_n, BLOCK_N)
            k = desc_k.load([row0 + start_n, 0])
            v = desc_v.load([row0 + start_n - BLOCK_N, 0])
            # Triton waits for every wgmma in flight right after a dot whose result the loop
            # uses (q k^T), and leaves one in flight whose result only the next iteration
            # reads after that wait (p v). So: block n's scores, then block n-1's p v, then
            # block n's softmax while p v runs.
            qk = tl.dot(q, k.T)
            acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
            p, alpha, l_i, m_i = _probs(qk, m_i, l_i, qk_scale)
        v = desc_v.load([row0 + full - BLOCK_N, 0])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    acc, l_i, m_i = _diagonal(
        acc, l_i, m_i, q, desc_k, desc_v, row0, offs_m, full, end, qk_scale, BLOCK_N
    )
    desc_o.store([row0 + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(desc_o.dtype))


@triton.jit
def _fwd_halves(
    desc_q,
    desc_k,
    desc_v,
    desc_o,
    qk_scale,
    S,
    HEAD_DIM: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    HALF: tl.constexpr = BLOCK_M // 2
    start_m = tl.program_id(0)
    if CAUSAL:
        start_m = tl.num_programs(0) - 1 - start_m
    row0 = tl.program_id(1) * S
    first = start_m * BLOCK_M
    q0 = desc_q.load([row0 + first, 0])
    q1 = desc_q.load([row0 + first + HALF, 0])
    m0 = tl.zeros([HALF], dtype=tl.float32) - float("inf")
    m1 = tl.zeros([HALF], dtype=tl.float32) - float("inf")
    l0 = tl.zeros([HALF], dtype=tl.float32)
    l1 = tl.zeros([HALF], dtype=tl.float32)
    acc0 = tl.zeros([HALF, HEAD_DIM], dtype=tl.float32)
    acc1 = tl.zeros([HALF, HEAD_DIM], dtype=tl.float32)
    full, end = A._block_ranges(start_m, S, BLOCK_M, BLOCK_N, CAUSAL)
    for start_n in range(0, full, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        v = desc_v.load([row0 + start_n, 0])
        qk0 = tl.dot(q0, k.T)
        qk1 = tl.dot(q1, k.T)  # waited for here, before the first softmax
        p0, alpha0, l0, m0 = _probs(qk0, m0, l0, qk_scale)
        acc0 = tl.dot(p0.to(v.dtype), v, acc0 * alpha0[:, None])  # in flight during...
        p1, alpha1, l1, m1 = _probs(qk1, m1, l1, qk_scale)  # ...this softmax
        acc1 = tl.dot(p1.to(v.dtype), v, acc1 * alpha1[:, None])
    offs0 = first + tl.arange(0, HALF)
    acc0, l0, m0 = _diagonal(
        acc0, l0, m0, q0, desc_k, desc_v, row0, offs0, full, end, qk_scale, BLOCK_N
    )
    acc1, l1, m1 = _diagonal(
        acc1, l1, m1, q1, desc_k, desc_v, row0, offs0 + HALF, full, end, qk_scale, BLOCK_N
    )
    desc_o.store([row0 + first, 0], (acc0 / l0[:, None]).to(desc_o.dtype))
    desc_o.store([row0 + first + HALF, 0], (acc1 / l1[:, None]).to(desc_o.dtype))


# Each variant: (kernel, rows of the q/o tile per load, configs). The library's own winners
# (128 x 128 at d=128, 128 x 64 at d=64, 8 warps, 3 stages) are timed as "library (autotuned)".
VARIANTS: dict[str, tuple[Callable, Callable[[int], int], list[Config]]] = {
    "library": (
        A._attn_fwd_tma.fn,
        lambda bm: bm,
        [(256, 64, 16, 2), (256, 64, 16, 3), (256, 32, 16, 3), (256, 128, 16, 2)],
    ),
    "pipelined": (
        _fwd_pipelined,
        lambda bm: bm,
        [
            (128, 128, 8, 2),
            (128, 128, 8, 3),
            (128, 64, 8, 3),
            (128, 64, 8, 2),
            (64, 64, 4, 3),
            (256, 64, 16, 2),
        ],
    ),
    "halves": (
        _fwd_halves,
        lambda bm: bm // 2,
        [(128, 64, 8, 3), (128, 64, 4, 3), (256, 64, 8, 2), (128, 128, 8, 3)],
    ),
}
CASES = [(d, dt, c) for d in (128, 64) for dt in ("float16", "bfloat16") for c in (False, True)]
GPU_SHAPE = (4, 32, 4096)
SMOKE_SHAPE = (1, 2, 128)
SMOKE_CONFIGS = {
    "library": [(32, 32, 4, 1)],
    "pipelined": [(32, 32, 4, 1)],
    "halves": [(64, 32, 4, 1)],
}
COMPILE_THREADS = 8
"""Configs of one case compile side by side before any is timed (Triton's compile releases the
GIL in its passes and in ptxas): serially, 14 configs x 8 cases took most of the time budget."""


def launch_args(
    q_rows: Callable[[int], int], cfg: Config, q, k, v, causal: bool
) -> tuple[tuple[int, int], tuple, dict, torch.Tensor]:
    """(grid, args, meta, o) of one launch at `cfg` on (batch, heads, seq, d) tensors."""
    bm, bn, warps, stages = cfg
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    desc = compat.tensor_descriptor()
    rows = q_rows(bm)
    shape, strides = [B * H * S, D], [D, 1]
    descs = [desc(t, shape, strides, [r, D]) for t, r in ((q, rows), (k, bn), (v, bn), (o, rows))]
    meta = {
        "HEAD_DIM": D,
        "CAUSAL": causal,
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "num_warps": warps,
        "num_stages": stages,
    }
    return (S // bm, B * H), (*descs, A.LOG2E / math.sqrt(D), S), meta, o


def launch(kernel: Callable, q_rows: Callable[[int], int], cfg: Config, q, k, v, causal: bool):
    grid, args, meta, o = launch_args(q_rows, cfg, q, k, v, causal)
    kernel[grid](*args, **meta)
    return o


def precompile(jobs: list[tuple[Callable, Callable[[int], int], Config]], q, k, v, causal: bool):
    """Compile every (kernel, config) of a case in threads; failures surface at the launch."""

    def one(job: tuple[Callable, Callable[[int], int], Config]) -> None:
        kernel, q_rows, cfg = job
        grid, args, meta, _ = launch_args(q_rows, cfg, q, k, v, causal)
        try:
            kernel.warmup(*args, grid=grid, **meta)
        except Exception:  # noqa: BLE001, S110 - the timed launch records it
            pass

    with ThreadPoolExecutor(COMPILE_THREADS) as pool:
        list(pool.map(one, jobs))


def tflops(shape: tuple[int, int, int, int], causal: bool, ms: float) -> float:
    b, h, n, d = shape
    return 4.0 * b * h * n * n * d / (2 if causal else 1) / (ms * 1e-3) / 1e12


def correct(ref: Reference, out: torch.Tensor, shape: list[int], dtype: str) -> dict:
    """The library's verdict on `out` (its check's calibrated rule and the kernel's tolerances)."""
    case = CaseResult(shape_set="bench", shape=shape, dtype=dtype, layout="contiguous")
    ref.judge(case, [out])
    return {
        "ok": case.status == "passed",
        "rel_l2": case.rel_l2,
        "bound": case.bound_rel_l2,
        "why": case.reason,
    }


def case(
    d: int, dtype: str, causal: bool, shape: tuple[int, int, int], device: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Reference, dict]:
    """One case's random q, k, v, SDPA's output judged by the library's rule, and its row's
    fields."""
    b, h, s = shape
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device=device, dtype=getattr(torch, dtype)) for _ in "qkv")
    spec = A.ATTENTION_CAUSAL if causal else A.ATTENTION
    ref = Reference(
        spec, [A._reference(q, k, v, causal)], dtype, exact.run(A._reference, (q, k, v, causal))
    )
    return q, k, v, ref, {"d": d, "dtype": dtype, "causal": causal, "shape": [b, h, s, d]}


def run_case(d: int, dtype: str, causal: bool, smoke: bool) -> list[dict]:
    device = "cpu" if smoke else "cuda"
    q, k, v, ref, base = case(d, dtype, causal, SMOKE_SHAPE if smoke else GPU_SHAPE, device)
    sdpa_runs: list[float] = []
    lib_runs: list[float] = []

    def timed(fn: Callable[[], object]) -> float | None:
        return None if smoke else quantiles_ms(fn)[0]

    def both() -> None:  # SDPA and the library between variants: the clock's drift shows
        if not smoke:
            sdpa_runs.append(quantiles_ms(lambda: A._reference(q, k, v, causal))[0])
            lib_runs.append(quantiles_ms(lambda: A.attention(q, k, v, causal))[0])

    lib_out = A.attention(q, k, v, causal)
    rows = [
        base | {"variant": "sdpa", "config": None, "correct": True},
        base
        | {
            "variant": "library (autotuned)",
            "config": str(getattr(A._attn_fwd_tma, "best_config", None)),
            "correct": correct(ref, lib_out, base["shape"], dtype),
        },
    ]
    both()
    plan = [
        (name, kernel, q_rows, cfg)
        for name, (kernel, q_rows, configs) in VARIANTS.items()
        for cfg in (SMOKE_CONFIGS[name] if smoke else configs)
    ]
    seq = base["shape"][2]
    fits = [j for j in plan if not (causal and j[3][1] > j[3][0]) and seq % j[3][0] == 0]
    if not smoke:
        precompile([(kern, q_rows, cfg) for _, kern, q_rows, cfg in fits], q, k, v, causal)
    last = plan[0][0]
    for name, kernel, q_rows, cfg in plan:
        if name != last:
            both()
            last = name
        row = base | {"variant": name, "config": list(cfg), "ms": None, "correct": None}
        rows.append(row)
        if (name, kernel, q_rows, cfg) not in fits:
            row["error"] = "skipped: BLOCK_N > BLOCK_M (causal) or seq % BLOCK_M"
            continue
        try:
            out = launch(kernel, q_rows, cfg, q, k, v, causal)
            row["correct"] = correct(ref, out, base["shape"], dtype)
            if row["correct"]["ok"]:
                call = (kernel, q_rows, cfg)
                row["ms"] = timed(lambda c=call: launch(*c, q, k, v, causal))
        except Exception as exc:  # noqa: BLE001 - a config that does not compile or fit
            row["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
    both()
    sdpa_ms = statistics.median(sdpa_runs) if sdpa_runs else None
    lib_ms = statistics.median(lib_runs) if lib_runs else None
    rows[0]["ms"], rows[1]["ms"] = sdpa_ms, lib_ms
    for row in rows:
        row["sdpa_ms"], row["library_ms"] = sdpa_ms, lib_ms
        row["sdpa_runs_ms"], row["library_runs_ms"] = sdpa_runs, lib_runs
        if row["ms"] is not None and sdpa_ms is not None and lib_ms is not None:
            row["tflops"] = tflops(tuple(base["shape"]), causal, row["ms"])
            row["vs_sdpa"] = sdpa_ms / row["ms"]  # above 1: faster than SDPA
            row["vs_library"] = lib_ms / row["ms"]
    return rows


def table(rows: list[dict]) -> str:
    head = (
        f"{'case':<22} {'variant':<20} {'config':<18} {'ms':>7} {'TFLOP/s':>8} "
        f"{'xSDPA':>6} {'xlib':>6}  correct"
    )
    lines = [head]
    for r in rows:
        case = f"d{r['d']} {r['dtype'][:4]} {'causal' if r['causal'] else 'full'}"
        ms = f"{r['ms']:.4f}" if r["ms"] is not None else "-"
        tf = f"{r['tflops']:.0f}" if "tflops" in r else "-"
        xs = f"{r['vs_sdpa']:.3f}" if "vs_sdpa" in r else "-"
        xl = f"{r['vs_library']:.3f}" if "vs_library" in r else "-"
        ok = (
            r["correct"]
            if isinstance(r["correct"], bool) or r["correct"] is None
            else r["correct"]["ok"]
        )
        note = f"  {r['error']}" if "error" in r else ""
        cfg = "x".join(map(str, r["config"])) if isinstance(r["config"], list) else "-"
        lines.append(
            f"{case:<22} {r['variant']:<20} {cfg:<18} {ms:>7} {tf:>8} {xs:>6} {xl:>6}  {ok}{note}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "out",
        nargs="?",
        default=os.path.join(os.environ.get("OUT", "."), "attention_variants.json"),
    )
    ap.add_argument(
        "--cpu-smoke",
        action="store_true",
        help="under TRITON_INTERPRET=1: each variant once at 1x2x128xd",
    )
    args = ap.parse_args()
    started = time.time()
    cases = CASES
    if args.cpu_smoke:  # the interpreter has no bf16 dot; fp16 at both head dims
        cases = [(d, "float16", c) for d in (64, 128) for c in (False, True)]
    rows: list[dict] = []
    for d, dtype, causal in cases:
        rows += run_case(d, dtype, causal, args.cpu_smoke)
        print(f"d={d} {dtype} causal={causal} done at {time.time() - started:.0f} s", flush=True)
    print(table(rows))
    device = "interpreter" if args.cpu_smoke else torch.cuda.get_device_name()
    report = {
        "device": device,
        "triton": triton.__version__,
        "torch": torch.__version__,
        "seconds": time.time() - started,
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out} ({report['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
