"""GPU study of the attention forward with warps specialized by hand (kernels/_attention_ws.py,
Gluon, Triton 3.6+ on Hopper) against torch SDPA and the library's `tl` kernel.

Every config is checked against SDPA by the library's own rule, then timed by the library's
timing (do_bench, L2 flushed), SDPA and the `tl` kernel (`_attn_fwd_tma`, autotuned) timed
again between configs on the same inputs (the ratios use their medians). A config is (rows a
consumer warpgroup takes, keys a K/V block holds, slots in the ring, consumer warpgroups).

  python benchmarks/attention_gluon.py [OUT.json] [--smoke]   (an H100, Triton 3.6+)
  python benchmarks/attention_gluon.py --compile              (no GPU: sm_90 PTX and resources)
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
from _common import ROOT

sys.path.insert(0, str(ROOT))
from kernels import _attention_ws as ws  # noqa: E402
from workbench.runtime import compat  # noqa: E402

CONFIGS = {
    128: [(64, 128, 2, 2)],
    64: [(64, 128, 2, 2), (64, 128, 2, 3), (64, 128, 3, 3)],
}
"""(rows, block_n, stages, consumers): two consumers first."""
CASES = [(d, dt, c) for d in (128, 64) for dt in ("float16", "bfloat16") for c in (False, True)]


def tl_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """The library's `tl` kernel on the same inputs (what `attention` runs without Gluon)."""
    from kernels import attention as A

    saved = A._ws_ok
    A._ws_ok = lambda *_: False
    try:
        return A.attention(q, k, v, causal)
    finally:
        A._ws_ok = saved


def run_case(d: int, dtype: str, causal: bool, shape: tuple[int, int, int]) -> list[dict]:
    import attention_variants as av
    from attention_variants import A, quantiles_ms

    q, k, v, ref, base = av.case(d, dtype, causal, shape, "cuda")
    sdpa: list[float] = []
    lib: list[float] = []

    def both() -> None:
        sdpa.append(quantiles_ms(lambda: A._reference(q, k, v, causal))[0])
        lib.append(quantiles_ms(lambda: tl_attention(q, k, v, causal))[0])

    lib_ok = av.correct(ref, tl_attention(q, k, v, causal), base["shape"], dtype)
    rows = [base | {"variant": "sdpa", "config": None, "correct": True}]
    rows.append(base | {"variant": "tl (autotuned)", "config": None, "correct": lib_ok})
    both()
    for cfg in CONFIGS[d]:
        row = base | {"variant": "gluon ws", "config": list(cfg), "ms": None, "correct": None}
        rows.append(row)
        tiles = dict(zip(("rows", "block_n", "stages", "consumers"), cfg))

        def run(tiles: dict = tiles) -> torch.Tensor:
            o = torch.empty_like(q)
            ws.attention(q, k, v, o, causal, **tiles)
            return o

        try:
            row["correct"] = av.correct(ref, run(), base["shape"], dtype)
            if row["correct"]["ok"]:
                row["ms"] = quantiles_ms(run)[0]
        except Exception as exc:  # noqa: BLE001 - a config that does not compile or fit
            row["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
        both()
    sdpa_ms, lib_ms = statistics.median(sdpa), statistics.median(lib)
    rows[0]["ms"], rows[1]["ms"] = sdpa_ms, lib_ms
    for row in rows:
        row |= {"sdpa_ms": sdpa_ms, "library_ms": lib_ms}
        row |= {"sdpa_runs_ms": sdpa, "library_runs_ms": lib}
        if row["ms"] is not None:
            row["tflops"] = av.tflops(tuple(base["shape"]), causal, row["ms"])
            row["vs_sdpa"] = sdpa_ms / row["ms"]  # above 1: faster than SDPA
            row["vs_library"] = lib_ms / row["ms"]
    return rows


def cross_compile() -> list[str]:
    """Each config for sm_90 without a GPU: its shared memory, warps, wgmmas, setmaxnreg values,
    registers and spills."""
    from workbench.ir import disasm

    lines = []
    for d, configs in CONFIGS.items():
        for rows, block_n, stages, consumers in configs:
            for causal in (False, True):
                t = torch.empty(1, 1, 512, d, dtype=torch.float16)
                tiles = {"rows": rows, "block_n": block_n, "stages": stages, "consumers": consumers}
                args, options, _ = ws.launch_args(t, t, t, t, causal, **tiles)
                kernel = compat.cross_compile(ws.attn_fwd_ws, 90, args, options)
                with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
                    cubin.write(kernel.asm["cubin"])
                    cubin.flush()
                    res = disasm.kernel_resources(kernel, 90, cubin.name)
                ptx = kernel.asm["ptx"]
                regs = sorted(set(re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)))
                lines.append(
                    f"d={d} rows={rows} block_n={block_n} stages={stages} consumers={consumers} "
                    f"causal={causal}: "
                    f"smem {kernel.metadata.shared} B, warps {res.num_warps}, "
                    f"{len(re.findall(r'wgmma.mma_async', ptx))} wgmma, setmaxnreg {regs}, "
                    f"{res.regs} registers, {res.local_bytes} B spilled"
                )
    return lines


def main() -> None:
    if "--compile" in sys.argv:
        print("\n".join(cross_compile()))
        return
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0] if args else "attention_gluon.json")
    shape = (1, 4, 1024) if smoke else (4, 32, 4096)
    started = time.time()
    rows: list[dict] = []
    for d, dtype, causal in CASES[:2] if smoke else CASES:
        rows += run_case(d, dtype, causal, shape)
        report = {
            "device": torch.cuda.get_device_name(),
            "triton": triton.__version__,
            "torch": torch.__version__,
            "seconds": time.time() - started,
            "rows": rows,
        }
        out.write_text(json.dumps(report, indent=2, default=str))  # each case: a hang keeps it
        print(f"d={d} {dtype} causal={causal} done at {time.time() - started:.0f} s", flush=True)
    from attention_variants import table

    print(table(rows))


if __name__ == "__main__":
    main()
