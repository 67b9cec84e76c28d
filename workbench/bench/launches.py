"""How one call of a kernel's workload launches (child side, on a GPU): the kernels it launches
and their busy time (CUPTI, through torch.profiler), its time launched eagerly, and its time
replayed from one CUDA graph, whose outputs are checked against the reference.

A call whose GPU busy time is a small share of its eager time is launch-bound; the graph replay
is both the measurement of that and the fix `diagnose --try cuda-graph` applies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from workbench.bench.timing import quantiles_ms
from workbench.catalog.spec import KernelSpec
from workbench.check import exact
from workbench.check.compare import compare
from workbench.check.result import CaseResult
from workbench.runtime import tensors

WARMUP = 3
"""Eager calls before the capture: Triton compiles and autotunes outside the graph."""


def launch_facts(spec: KernelSpec, args: tuple, dtype: str | None) -> dict[str, Any]:
    """launches, gpu_busy_ns, mean_gap_ns, eager_ms, graph_ms, graph_correct (and graph_problem
    when the workload cannot be captured: a host sync or an allocation inside, say)."""
    call = lambda: spec.kernel_fn(*args)  # noqa: E731
    for _ in range(WARMUP):
        call()
    torch.cuda.synchronize()
    facts: dict[str, Any] = {**_kernels_of(call), "eager_ms": quantiles_ms(call)[0]}
    try:
        graph, out = _capture(call)
    except Exception as exc:  # noqa: BLE001 - a workload that cannot be captured is a fact
        torch.cuda.synchronize()
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        facts["graph_problem"] = f"{type(exc).__name__}: {first}"
        return facts
    graph.replay()
    torch.cuda.synchronize()
    case = CaseResult("graph", [], dtype or "as given", "contiguous")
    wider = exact.run(spec.reference_fn, args)
    ref = tensors.outputs(spec.reference_fn(*args))
    compare(spec, case, tensors.outputs(out), ref, dtype, wider)
    facts["graph_correct"] = case.status == "passed"
    if case.status != "passed":
        facts["graph_problem"] = f"the replayed outputs are wrong: {case.reason}"
    facts["graph_ms"] = quantiles_ms(graph.replay)[0]
    return facts


def _capture(call: Callable[[], Any]) -> tuple[torch.cuda.CUDAGraph, Any]:
    """One call captured on a side stream (what torch.cuda.graph needs), its outputs kept."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = call()
    return graph, out


def _kernels_of(call: Callable[[], Any]) -> dict[str, Any]:
    """Kernels one call launches, their summed duration and the mean idle gap between them."""
    from torch.profiler import DeviceType, ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    spans = sorted(
        (e.time_range.start, e.time_range.end)
        for e in prof.events() or []
        if e.device_type == DeviceType.CUDA and e.time_range.end > 0
    )
    if not spans:
        return {"launches": 0, "gpu_busy_ns": 0.0}
    gaps = [max(0, b[0] - a[1]) for a, b in zip(spans, spans[1:])]
    return {
        "launches": len(spans),
        "gpu_busy_ns": 1e3 * sum(end - start for start, end in spans),  # profiler times are us
        "mean_gap_ns": 1e3 * sum(gaps) / len(gaps) if gaps else 0.0,
    }
