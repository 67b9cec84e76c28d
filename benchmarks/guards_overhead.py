"""What watching memory costs a check on a CPU host: the check job's run_check in Triton's
interpreter, with guard regions and the interpreter's bounds (the default) and without, on
library kernels' regular and irregular shape sets (float32). Runs interleaved, median of
REPEATS, in this one process (imports and first compiles paid before timing).

    python benchmarks/guards_overhead.py [NAME ...]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"
from workbench.runtime import compat  # noqa: E402

compat.fix_interpreter()  # imports triton: after the switch above

from workbench.catalog.discovery import discover  # noqa: E402
from workbench.catalog.loader import load_spec  # noqa: E402
from workbench.check.job import run_check  # noqa: E402

KERNELS = ["vector_add", "softmax", "layer_norm", "matmul", "gelu"]
REPEATS = 5


def timed(spec, guards: bool) -> float:
    start = time.perf_counter()
    run_check(spec, "cpu", True, lambda e: None, dtypes=["float32"], guards=guards)
    return time.perf_counter() - start


def main(names: list[str]) -> None:
    catalog = discover(["kernels"])
    print(f"{'kernel':<12} {'off s':>7} {'on s':>7} {'on/off':>7}")
    for name in names:
        spec = load_spec(catalog.find(name))
        timed(spec, True)  # first compiles and caches out of the timing
        off, on = [], []
        for _ in range(REPEATS):
            off.append(timed(spec, False))
            on.append(timed(spec, True))
        a, b = statistics.median(off), statistics.median(on)
        print(f"{name:<12} {a:7.3f} {b:7.3f} {b / a:7.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or KERNELS)
