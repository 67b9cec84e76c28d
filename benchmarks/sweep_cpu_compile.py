"""CPU goal: the static sweep's compile phase (16 configs of the grouped matmul, forked pool of
--jobs workers) against compiling them one after another in one process, each into a fresh
Triton cache. Prints both walls and the ratio (goal: <= 0.6). No GPU needed.

    python benchmarks/sweep_cpu_compile.py [--jobs 2] [--arch 90] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import wait
from pathlib import Path

from _common import MATMUL16, ROOT, publish

sys.path.insert(0, str(ROOT))

from workbench.catalog.loader import import_module, module_specs  # noqa: E402
from workbench.ir.capture import capture  # noqa: E402
from workbench.runtime import compat  # noqa: E402
from workbench.sweep.job import _configs, _target, config_launch  # noqa: E402
from workbench.sweep.pool import CompilePool  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--out")
    args = ap.parse_args()
    os.environ["TRITON_INTERPRET"] = "0"
    spec = module_specs(import_module(str(MATMUL16)))[0]
    launches = capture(spec, "cpu", "bfloat16", (4096, 4096, 4096))
    base, tuner = _target(launches)
    hook = tuner.configs[0].pre_hook
    configs = [config_launch(base, v, hook) for v in _configs("own", tuner, base)]
    tmp = Path(tempfile.mkdtemp(prefix="sweep-bench-"))

    os.environ["TRITON_CACHE_DIR"] = str(tmp / "parallel")
    start = time.perf_counter()
    pool = CompilePool(args.jobs)
    futures = [pool.submit(c, args.arch, tmp / f"p{i}.cubin") for i, c in enumerate(configs)]
    wait(futures)
    parallel = time.perf_counter() - start
    pool.close()
    failed = [f.result()["problem"] for f in futures if f.result()["problem"]]

    os.environ["TRITON_CACHE_DIR"] = str(tmp / "serial")
    start = time.perf_counter()
    for c in configs:
        compat.cross_compile(c.fn, args.arch, c.args, c.kwargs)
    serial = time.perf_counter() - start

    report = {
        "configs": len(configs),
        "jobs": args.jobs,
        "cores": os.cpu_count(),
        "arch": f"sm_{args.arch}",
        "serial_s": round(serial, 2),
        "parallel_s": round(parallel, 2),
        "ratio": round(parallel / serial, 3),
        "failed": failed,
    }
    publish(report, Path(args.out) if args.out else None, "sweep_cpu_compile")


if __name__ == "__main__":
    main()
