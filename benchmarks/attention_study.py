"""GPU study: why one attention config times differently in bench (do_bench) and sweep
(adaptive_ms). For each case, our kernel and torch SDPA, each timed four ways: do_bench as bench
does it, adaptive_ms as the sweep does it, one CUDA graph of 20 calls replayed (no flush, no
host), and the host's own time per call (200 calls, one sync: above the GPU time means the
host cannot keep up). The SM clock and power (NVML, through torch) are read after each.

    python benchmarks/attention_study.py
"""

from __future__ import annotations

import sys
import time

import torch
from _common import ROOT

sys.path.insert(0, str(ROOT))
from kernels import attention as A  # noqa: E402
from workbench.bench.timing import adaptive_ms, quantiles_ms  # noqa: E402


def nvml() -> str:
    try:
        return f"{torch.cuda.clock_rate()} MHz {torch.cuda.power_draw() / 1000:.0f} W"
    except Exception as exc:  # noqa: BLE001 - NVML may be missing
        return f"nvml: {type(exc).__name__}"


def graph_ms(fn, calls: int = 20, replays: int = 10) -> float:
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / (calls * replays)


def host_ms(fn, calls: int = 200) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t) / calls * 1e3
    torch.cuda.synchronize()
    return host


def study(d: int, causal: bool, dtype: torch.dtype) -> None:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v = (torch.randn(4, 32, 4096, d, device="cuda", dtype=dtype) for _ in range(3))

    def ours() -> torch.Tensor:
        return A.attention(q, k, v, causal)

    def theirs() -> torch.Tensor:
        return sdpa(q, k, v, is_causal=causal)

    err = float((ours().float() - theirs().float()).norm() / theirs().float().norm())
    best = getattr(A._attn_fwd_tma, "best_config", None)
    print(f"d={d} causal={causal} {str(dtype)[6:]}: rel err {err:.1e}; autotuned {best}")
    for name, fn in (("ours", ours), ("sdpa", theirs), ("ours", ours)):
        time.sleep(1)
        bench = quantiles_ms(fn)[0]
        after_bench = nvml()
        time.sleep(1)
        sweep = adaptive_ms(fn)["ms"]
        g = graph_ms(fn)
        h = host_ms(fn)
        print(f"  {name:5} do_bench {bench:.4f} ({after_bench})  adaptive {sweep:.4f}"
              f"  graph {g:.4f}  host/call {h:.4f}  ({nvml()})")  # fmt: skip


def main() -> None:
    for d in (128, 64):
        for causal in (False, True):
            for dtype in (torch.bfloat16, torch.float16):
                study(d, causal, dtype)


if __name__ == "__main__":
    main()
