"""Rows and text of a cache report, shared by the CLI and the TUI (pure: no UI imports)."""

from __future__ import annotations

import time

from workbench.diagnosis.finding import Finding
from workbench.views.cache_reach import own_functions, reach_lines, reach_of
from workbench.views.text import table

COMPILED_HEADERS = (
    "entry",
    "kernel",
    "triton",
    "arch",
    "warps",
    "stages",
    "maxnreg",
    "smem B",
    "size B",
    "age",
    "problems",
)
TUNED_HEADERS = ("entry", "kernel", "key", "best config", "p50 ms", "configs", "age")


def finding_text(found: list[dict]) -> str:
    out = [
        f"[{f.severity}] {f.id}: {f.title}\n    evidence: {f.evidence.get('detail')}\n"
        f"    fix: {f.fix}"
        for f in map(Finding.from_dict, found)
    ]
    return "\n".join(out) or "no cache findings"


def compiled_row(c: dict, now: float) -> tuple:
    return (
        c["dir"],
        c["name"],
        c["triton_version"],
        c["arch"],
        c["num_warps"],
        c["num_stages"],
        c["maxnreg"],
        c["shared"],
        c["size"],
        age(now - c["mtime"]),
        ",".join(sorted({p.split(":")[0] for p in c["problems"]})),
    )


def tuned_row(t: dict, now: float) -> tuple:
    best = t["timings"][t["best"]] if t["best"] is not None else None
    cfg = best["config"] if best else {}
    text = " ".join(f"{k}={v}" for k, v in (cfg.get("kwargs") or {}).items())
    text += f" w{cfg.get('num_warps')} s{cfg.get('num_stages')}" if cfg else ""
    return (
        t["dir"],
        t["kernel"],
        tuple(t["key"] or ()),
        text or t["problem"],
        best["ms"][0] if best else "-",
        len(t["timings"]),
        age(now - t["mtime"]),
    )


def age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def summary_line(report: dict) -> str:
    s = report["scan"]
    return (
        f"cache {s['root']}: {len(s['compiled'])} compiled, {len(s['tuned'])} autotune, "
        f"{len(s['leftovers'])} leftover(s), {s['total_size'] / 1e6:.2f} MB; "
        f"Triton {report['triton'] or 'not installed'}"
    )


def foreign_line(scan: dict) -> str:
    shown = ", ".join(scan["foreign"][:5])
    more = scan["foreign_count"] - min(5, len(scan["foreign"]))
    return (
        f"left alone: {scan['foreign_count']} path(s) Triton does not write ({shown}"
        f"{f', {more} more' if more > 0 else ''}); the doctor never reads or removes them"
    )


def own_entries(report: dict) -> tuple[list[dict], list[dict], str | None]:
    """The kernel's own compiled and autotune entries (all of them when its keys are unknown),
    and the line that says how many of the cache's they are."""
    s = report["scan"]
    own = own_functions(reach_of(report))
    compiled = [c for c in s["compiled"] if own is None or c["name"] in own]
    tuned = [t for t in s["tuned"] if own is None or t["kernel"] in own]
    note = (
        None
        if own is None
        else f"its own entries below: {len(compiled)} of {len(s['compiled'])} compiled, "
        f"{len(tuned)} of {len(s['tuned'])} autotune (`workbench cache` lists them all)"
    )
    return compiled, tuned, note


def report_text(report: dict) -> str:
    """Findings first, then the kernel's keys, then its own entries: the answer before the
    listing (a shared cache holds other projects' entries by the hundred)."""
    s = report["scan"]
    now = time.time()
    compiled, tuned, note = own_entries(report)
    lines = [summary_line(report), "", finding_text(report["findings"])]
    if report.get("reach"):
        lines += ["", *reach_lines(reach_of(report))]
    if note:
        lines.append(note)
    if compiled:
        lines += ["", table(COMPILED_HEADERS, [compiled_row(c, now) for c in compiled])]
    if tuned:
        lines += ["", table(TUNED_HEADERS, [tuned_row(t, now) for t in tuned])]
    if s.get("foreign_count"):
        lines += ["", foreign_line(s)]
    if report.get("problem"):
        p = report["problem"]
        lines += ["", f"problem: {p['cause']}\n  remedy: {p['remedy']}"]
    return "\n".join(lines)
