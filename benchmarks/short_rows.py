"""GPU study: what a memory-bound kernel can reach at a moderate size, and row-softmax variants.

For each size: a device-to-device copy of the case's bytes (torch `copy_`), a Triton copy with the
row structure of the softmax (one program per row, then ROWS rows per program), and softmax
variants: the library's (one row per program, divide per element), the same with one reciprocal
per row, ROWS rows per program, and a persistent grid walking row blocks with loads pipelined.
Each is checked against torch.softmax before it is timed (median of do_bench, L2 flushed).
Prints one table: GB/s and the ratio to the 1 GiB copy's bandwidth and to the same-size copy.

    python benchmarks/short_rows.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

LOG2E = tl.constexpr(math.log2(math.e))


@triton.jit
def _copy_rows(x_ptr, y_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    at = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tl.store(y_ptr + at, tl.load(x_ptr + at, mask=mask), mask=mask)


@triton.jit
def _softmax_rows(
    x_ptr, y_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, RCP: tl.constexpr
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    at = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + at, mask=mask, other=-float("inf")).to(tl.float32) * LOG2E
    e = tl.exp2(x - tl.max(x, axis=1)[:, None])
    if RCP:
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
    else:
        y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + at, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_persistent(
    x_ptr, y_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, STAGES: tl.constexpr
):
    cols = tl.arange(0, BLOCK_N)
    for first in tl.range(
        tl.program_id(0) * ROWS, n_rows, tl.num_programs(0) * ROWS, num_stages=STAGES
    ):
        rows = first + tl.arange(0, ROWS)
        at = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + at, mask=mask, other=-float("inf")).to(tl.float32) * LOG2E
        e = tl.exp2(x - tl.max(x, axis=1)[:, None])
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        tl.store(y_ptr + at, y.to(y_ptr.dtype.element_ty), mask=mask)


def median_ms(fn) -> float:
    return float(do_bench(fn, warmup=25, rep=200, return_mode="median"))


def ceiling_gbps() -> float:
    """GB/s (read + written) of a 1 GiB device-to-device copy."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.numel() / median_ms(lambda: dst.copy_(src)) / 1e6


def variants(x: torch.Tensor, y: torch.Tensor, sms: int) -> dict:
    """Name -> a call of each variant on x, writing y (torch.softmax returns its own)."""
    m, n = x.shape
    block = triton.next_power_of_2(n)

    def rows_call(kernel, rows: int, warps: int, **extra):
        grid = (triton.cdiv(m, rows),)
        return lambda: kernel[grid](x, y, m, n, BLOCK_N=block, ROWS=rows, num_warps=warps, **extra)

    def persistent(rows: int, warps: int, occ: int, stages: int):
        grid = (min(triton.cdiv(m, rows), sms * occ),)
        return lambda: _softmax_persistent[grid](
            x, y, m, n, BLOCK_N=block, ROWS=rows, STAGES=stages, num_warps=warps
        )

    cases = {"torch copy_": lambda: y.copy_(x), "torch.softmax": lambda: torch.softmax(x, -1)}
    for rows, warps in ((1, 4), (1, 8), (2, 4), (4, 4), (4, 8), (8, 8)):
        if rows * block <= 16384:
            cases[f"copy rows={rows} w={warps}"] = rows_call(_copy_rows, rows, warps)
            for rcp in (False, True):
                name = f"softmax rows={rows} w={warps} rcp={int(rcp)}"
                cases[name] = rows_call(_softmax_rows, rows, warps, RCP=rcp)
    for rows, warps, occ, stages in ((1, 4, 8, 2), (2, 4, 4, 2), (4, 8, 2, 2), (2, 8, 4, 3)):
        if rows * block <= 16384:
            name = f"persistent rows={rows} w={warps} occ={occ} st={stages}"
            cases[name] = persistent(rows, warps, occ, stages)
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy_gbps = ceiling_gbps()
    rows_out: list[dict] = []
    print(f"copy 1 GiB each way: {copy_gbps:,.0f} GB/s")
    for shape in ((32768, 1024), (8192, 8192), (16384, 1024), (32768, 4096)):
        for dtype in (torch.float16, torch.bfloat16):
            x = torch.randn(shape, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            ref = torch.softmax(x.double(), dim=-1)
            nbytes = 2 * x.numel() * x.element_size()
            size_ms = None
            for name, fn in variants(x, y, sms).items():
                copying = name.startswith(("copy", "torch copy"))
                try:
                    y.fill_(float("nan"))
                    out = fn()
                    torch.cuda.synchronize()
                    got = out if name == "torch.softmax" else y
                    ok = (
                        bool(torch.equal(y, x))
                        if copying
                        else (float((got.double() - ref).norm() / ref.norm()) < 1e-2)
                    )
                    ms = median_ms(fn)
                except Exception as exc:  # noqa: BLE001 - a variant that fails is a row
                    print(f"{shape} {dtype} {name}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                if name == "torch copy_":
                    size_ms = ms
                gbps = nbytes / ms / 1e6
                row = {"shape": list(shape), "dtype": str(dtype)[6:], "variant": name, "ms": ms,
                       "gbps": gbps, "vs_copy": gbps / copy_gbps,
                       "vs_size_copy": (size_ms / ms) if size_ms else None, "ok": ok}  # fmt: skip
                rows_out.append(row)
                print(f"{'x'.join(map(str, shape)):>10} {row['dtype']:>8} {name:<40} "
                      f"{ms * 1e3:8.1f} us {gbps:7.0f} GB/s {row['vs_copy']:.3f} "
                      f"{row['vs_size_copy'] or 0:.3f} {'ok' if ok else 'WRONG'}")  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"copy_gbps": copy_gbps, "rows": rows_out}, f, indent=1)


if __name__ == "__main__":
    main()
