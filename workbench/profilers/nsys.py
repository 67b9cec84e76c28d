"""Nsight Systems: the command line around the target and the SQLite export of its report.

`nsys profile -t cuda,nvtx --sample=none --cpuctxsw=none` records only CUDA and NVTX activity
(CPU sampling and context switches make a tiny script's trace gigabytes large), and only between
the target's cudaProfilerStart/Stop, so warm-up and autotuning stay out of the trace. The export
is read by `nsysreport`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from workbench.profilers.launch import PLACEHOLDER
from workbench.profilers.toolerrors import classify, report_problem
from workbench.runtime.errors import WorkbenchError

REPORT_STEM = "profile"


def command(nsys: str) -> list[str]:
    return [
        nsys,
        "profile",
        "-t",
        "cuda,nvtx",
        "--sample=none",
        "--cpuctxsw=none",
        "--capture-range=cudaProfilerApi",  # the target's ranges, not its warm-up
        "--capture-range-end=stop",
        "--stats=false",
        "-f",
        "true",
        "-o",
        f"{PLACEHOLDER}/{REPORT_STEM}",
    ]


def export_sqlite(nsys: str, report: str, timeout: float = 300.0) -> str:
    """`nsys export` the .nsys-rep beside itself; returns the .sqlite path."""
    out_path = str(Path(report).with_suffix(".sqlite"))
    cmd = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true"]
    cmd += ["--output", out_path, report]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise WorkbenchError(report_problem(report, f"nsys export ran past {timeout:g} s")) from exc
    text = done.stdout + done.stderr
    if done.returncode != 0 or not Path(out_path).is_file():
        problem = classify(text, "nsys")
        if problem is None or problem.kind in ("tool-error", "corrupt-report"):
            problem = report_problem(report, f"nsys export failed: {text.strip()[-400:]}")
        raise WorkbenchError(problem)
    return out_path
