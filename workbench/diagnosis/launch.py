"""Launch-bound workloads: the GPU idles between kernels while the host launches them. From
`Facts.launch` (Nsight Systems, or the bench's eager vs one-CUDA-graph timing); the graph replay,
when measured, decides, and its saving is the gain."""

from __future__ import annotations

from workbench.diagnosis.facts import Facts, LaunchFacts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text, limit
from workbench.diagnosis.registry import detector


@detector("launch-bound")
def launch_bound(facts: Facts) -> list[Finding]:
    lf = facts.launch
    if lf is None:
        return []
    idle, graph = lf.idle_fraction, graph_gain(lf)
    if lf.launches is not None and lf.launches < limit("launch-bound", "launches"):
        return []  # one launch: its overhead is the caller's to amortize, nothing to fuse here
    if graph is not None:
        if graph < limit("launch-bound", "graph_gain"):
            return []  # the replay was measured: it says launches cost little
    elif not (
        idle is not None
        and idle >= limit("launch-bound", "idle")
        and (lf.launches or 0) >= limit("launch-bound", "launches")
    ):
        return []
    said = [f"{lf.launches} launches" if lf.launches is not None else "launches"]
    said += [f"GPU idle {idle:.0%}"] if idle is not None else []
    said += [f"{lf.mean_gap_ns / 1e3:.0f} us mean gap"] if lf.mean_gap_ns else []
    title = ", ".join(said)
    if graph is not None and lf.eager_ms and lf.graph_ms:
        title += (
            f"; one CUDA graph: {lf.eager_ms:.3g} -> {lf.graph_ms:.3g} ms "
            f"({lf.eager_ms / lf.graph_ms:.1f}x)"
        )
    evidence = {
        "source": "bench" if lf.eager_ms is not None else "nsys",
        "launches": lf.launches,
        "idle_fraction": round(idle, 3) if idle is not None else None,
        "mean_gap_us": round(lf.mean_gap_ns / 1e3, 1) if lf.mean_gap_ns else None,
        "eager_ms": lf.eager_ms,
        "graph_ms": lf.graph_ms,
        "graph_correct": lf.graph_correct,
        "shape": lf.shape,
        "dtype": lf.dtype,
    }
    gain = graph if graph is not None else idle
    fix = fix_text("launch-bound", evidence, "graph-wrong" if lf.graph_correct is False else None)
    return [
        Finding(
            id="launch-bound",
            title=title,
            severity="high" if (gain or 0.0) >= 0.5 else "medium",
            evidence=evidence,
            fix=fix,
            gain=gain,
            fix_id="cuda-graph" if lf.graph_correct is not False else None,
        )
    ]


def graph_gain(lf: LaunchFacts) -> float | None:
    """The share of one eager call a correct graph replay saves, when both were timed."""
    if not lf.eager_ms or not lf.graph_ms or lf.graph_correct is False:
        return None
    return max(0.0, 1.0 - lf.graph_ms / lf.eager_ms)
