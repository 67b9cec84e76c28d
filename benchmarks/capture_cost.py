"""GPU study: where a sweep worker's per-shape set-up goes (context, capture, inputs, first run
of each config in a fresh process). Prints seconds per phase and the top of a profile of the
slowest capture.   python benchmarks/capture_cost.py"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402
from _common import MATMUL16, ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))

import_s = time.perf_counter() - t0
from workbench.catalog.loader import import_module, module_specs  # noqa: E402
from workbench.ir.capture import capture  # noqa: E402

spec = module_specs(import_module(str(MATMUL16)))[0]
t = time.perf_counter()
torch.cuda.init()
torch.empty(1, device="cuda")
print(f"torch import {import_s:.2f} s; cuda context {time.perf_counter() - t:.2f} s")
for shape in ((4096, 4096, 4096), (8192, 8192, 512), (4096, 4096, 4096), (256, 4096, 4096)):
    t = time.perf_counter()
    prof = cProfile.Profile()
    prof.enable()
    launches = capture(spec, "cuda", "bfloat16", shape)
    prof.disable()
    s = time.perf_counter() - t
    print(f"capture {shape}: {s:.3f} s, {len(launches)} launches")
    if s > 0.2:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(18)
        print(out.getvalue()[-3500:])
    t = time.perf_counter()
    inputs = spec.make_inputs(shape, torch.bfloat16, "cuda")
    torch.cuda.synchronize()
    print(f"  inputs {time.perf_counter() - t:.3f} s")
    t = time.perf_counter()
    spec.kernel_fn(*inputs)  # the autotuner's first call: every config compiled/loaded and timed
    torch.cuda.synchronize()
    print(f"  first autotuned call {time.perf_counter() - t:.3f} s")
