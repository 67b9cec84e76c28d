"""Rows for tables, shared by the CLI and the TUI: data in, plain cells out (no UI imports)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from workbench.catalog.discovery import KernelEntry
from workbench.check import access, rule, verdict
from workbench.check.result import CaseResult, CheckReport
from workbench.diagnosis.measured import bank_conflict_ratios, clean_message
from workbench.profilers.ncumetrics import NcuLaunch, launches
from workbench.views.text import fmt

if TYPE_CHECKING:
    from workbench.ir.result import IrVariant
    from workbench.run.jobs import Outcome
    from workbench.runtime.errors import Problem

KERNEL_HEADERS = ("name", "kind", "dtypes", "shape sets", "file")
RESOURCE_HEADERS = ("config", "regs", "spill B", "smem B", "warps", "stages", "occ %", "limiter")
CHECK_HEADERS = (
    "status",
    "dtype",
    "shape",
    "layout",
    "relL2",
    "ref relL2",
    "worst",
    "ref worst",
    "worst at",
    "note",
)


def kernel_row(k: KernelEntry) -> tuple[str, ...]:
    return (
        k.name,
        k.kind,
        ",".join(k.dtypes) if k.dtypes else "from inputs",
        " ".join(f"{s}:{len(v)}" for s, v in (k.shapes or {}).items()) or "from inputs",
        os.path.relpath(k.file),
    )


def case_shape(case: CaseResult) -> str:
    """The case's shape, or for inputs get_inputs() made, their tensors' shapes."""
    if case.shape or not case.inputs:
        return "x".join(map(str, case.shape)) or "-"
    return ", ".join("x".join(map(str, s)) or "scalar" for s in case.inputs)


def check_row(case: CaseResult) -> tuple[str, ...]:
    """A case's errors: the kernel's relative L2 and worst element (relative to max(|value|,
    RMS)) against its yardstick, and the reference's own beside them when calibrated."""
    return (
        case.status,
        case.dtype,
        case_shape(case),
        case.layout,
        fmt(case.rel_l2, 2),
        fmt(case.ref_rel_l2, 2),
        fmt(case.max_rel_diff, 2),
        fmt(case.ref_max_rel, 2),
        str(case.worst_index) if case.status == "failed" else "",
        case.reason,
    )


def check_verdict(report: CheckReport) -> str:
    """The check's closing lines: the verdict on the given inputs, then on the derived ones,
    the fix of the first cause, the facts, and the rule the cases were judged by."""
    s = report.summary()
    given, derived = s["given"], s["derived"]
    name = report.kernel
    lines = [f"{name} on its given inputs: {_head(given)} ({_counts(given)}; {report.mode} mode)"]
    if derived["cases"]:
        kinds = {c.layout == "strided" for c in report.cases if verdict.derived(c)}
        made = " and ".join(DERIVED_KINDS[k] for k in sorted(kinds))
        lines.append(f"{name} on derived inputs ({made}): {_head(derived)} ({_counts(derived)})")
    lines += [f"  fix: {s['fix']}"] if s["fix"] else []
    seen = [r for c in report.cases for r in c.accesses] + report.sanitizer.get("accesses", [])
    lines += [f"  access: {said}" for said in access.across(seen)]
    lines += [f"  fact: {words}" for key, words in FACTS.items() if s.get(key)]
    lines += [f"  note: {note}" for note in report.notes]
    if s["error_trend"]:
        lines.append(f"  fact: {_trend_words(s['error_trend'])}")
    tail = s["tail"]
    if tail and tail["floors"]:
        lines.append(
            f"  fact: the grid launches n // {tail['name']} programs ({tail['name']}="
            f"{tail['block']}): the partial tile has none"
        )
    lines += [f"  rule: {words}" for words in rule.words(report.cases)]
    return "\n".join(lines)


def sanitizer_lines(report: dict) -> str:
    """compute-sanitizer's part of a check: the tool, its error count, what it could not read
    and where its log is."""
    errors = report.get("errors")
    said = f"{errors} error(s)" if errors is not None else "no ERROR SUMMARY"
    lines = [f"compute-sanitizer {report.get('tool')}: {said}; log {report.get('log')}"]
    if report.get("missing"):
        lines.append(f"  {report['missing']}")
    lines += [f"  unread: {text}" for text in report.get("other", [])[:3]]
    return "\n".join(lines)


DERIVED_KINDS = {False: "irregular sizes cut from get_inputs()", True: "strided copies"}


def _head(part: dict) -> str:
    """CORRECT or NOT CORRECT, with the verdict when it says more."""
    if not part["cases"] - part["skipped"]:
        return verdict.NOT_RUN
    head = "NOT CORRECT" if verdict.wrong(part) else "CORRECT"
    return head + (f": {part['verdict']}" if part["verdict"] != verdict.CORRECT else "")


def _counts(part: dict) -> str:
    shown = [f"{part['passed']} passed"]
    shown += [f"{part[k]} {k}" for k in ("failed", "errors", "skipped") if part[k]]
    return ", ".join(shown)


FACTS = {
    "stride_only_errors": "errors only with strided (non-contiguous) inputs",
    "boundary_only_errors": "errors only in the last partial tile of a block (the tail)",
    "irregular_only_errors": "errors only at shapes that are not multiples of the block",
    "nondeterministic": "outputs differ from run to run on the same inputs",
    "stochastic": "random outputs from another RNG stream than the reference's",
}


def _trend_words(trend: dict) -> str:
    steps = ", ".join(f"{fmt(e)} at {n}" for n, e in zip(trend["sizes"], trend["rel_l2"]))
    return f"relative L2 error grows with dimension {trend['dim']}: {steps}"


def resource_row(v: IrVariant) -> tuple:
    res = v.resources or {}
    occ = res.get("occupancy") or {}
    return (
        v.label,
        res.get("regs", "-"),
        res.get("spill_bytes", "-"),
        res.get("shared_bytes", "-"),
        res.get("num_warps", "-"),
        res.get("num_stages", "-"),
        fmt(occ.get("percent")),
        occ.get("limiter", "-"),
    )


def finding_lines(found: list[dict]) -> str:
    """One line per finding; the same finding of several configs once, naming them (a
    16-config module gave 16 identical lines that did not say which config each was)."""
    groups: dict[tuple, list[str]] = {}
    for f in found:
        same = (f["severity"], f["id"], f.get("line"), f["title"], f["fix"])
        config = (f.get("evidence") or {}).get("config")
        groups.setdefault(same, []).extend([config] if config else [])
    lines = []
    for (severity, fid, line, title, fix), configs in groups.items():
        where = f":{line}" if line else ""
        shown = ", ".join(configs[:3]) + (
            f" and {len(configs) - 3} more" if len(configs) > 3 else ""
        )
        which = f"\n    config{'s' if len(configs) > 1 else ''}: {shown}" if configs else ""
        lines.append(f"[{severity}] {fid}{where}: {title}{which}\n    fix: {fix}")
    return "\n".join(lines) or "no static findings"


# ---- profile (ncu) -----------------------------------------------------------------------------

PROFILE_HEADERS = (
    "#",
    "kernel",
    "config",
    "us",
    "regs",
    "occ% th/ach",
    "limiter",
    "spill inst",
    "local B",
    "bank cfl ld/st",
    "DRAM%",
)
RULE_HEADERS = ("#", "rule", "est. gain", "says")
LINE_HEADERS = ("#", "line", "samples", "top stall", "local sectors", "smem excess", "code")


def profile_row(k: NcuLaunch) -> tuple[str, ...]:
    ratios = bank_conflict_ratios(k)
    shares = "/".join(f"{r:.1%}" if r is not None else "-" for r in ratios.values())
    conflicts = f"{_count(k.smem_bank_conflicts_ld)}/{_count(k.smem_bank_conflicts_st)}"
    return (
        str(k.launch),
        k.kernel,
        k.config or k.range or "-",
        fmt(k.duration_ns / 1e3 if k.duration_ns is not None else None),
        _count(k.registers_per_thread),
        f"{fmt(k.theoretical_occupancy_pct)}/{fmt(k.achieved_occupancy_pct)}",
        k.occupancy_limiter or "-",
        _count(k.spill_instructions),
        _count(k.local_bytes),
        conflicts + ("" if shares == "-/-" else f" ({shares})"),
        fmt(k.dram_throughput_pct),
    )


def profile_rows(summary: dict) -> list[tuple[str, ...]]:
    """One row per launch of an ncu summary (`PROFILE_HEADERS`)."""
    return [profile_row(k) for k in launches(summary)]


def profile_facts(summary: dict) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The per-launch table turned on its side, (headers, rows): one row per fact, one column
    per launch, for a narrow pane."""
    columns = profile_rows(summary)
    headers = ("", *(f"#{c[0]}" for c in columns))
    rows = [(label, *(c[i] for c in columns)) for i, label in enumerate(PROFILE_HEADERS) if i]
    return headers, rows


def rule_rows(summary: dict) -> list[tuple[str, ...]]:
    """NVIDIA's rules that fired, largest estimated speedup first."""
    rows = [(k.launch, r) for k in launches(summary) for r in k.rules]
    rows.sort(key=lambda lr: -(lr[1].get("speedup_pct") or 0))
    out = []
    for launch, r in rows:
        gain = r.get("speedup_pct")
        says = r.get("title") or clean_message(r.get("message") or "").split(". ")[0]
        out.append(
            (
                str(launch),
                r["rule"],
                f"{gain:.0f}% {r.get('speedup_type') or ''}".strip() if gain else "-",
                says if len(says) <= 90 else says[:89] + "…",
            )
        )
    return out


def hot_line_rows(summary: dict, per_launch: int = 6) -> list[tuple[str, ...]]:
    """The hottest source lines per launch: samples, the top stall, spill and shared excess."""
    out = []
    for k in launches(summary):
        for h in (k.hot_lines or [])[:per_launch]:
            stalls = {
                m.removeprefix("smsp__pcsamp_warps_issue_stalled_"): v
                for m, v in h.items()
                if m.startswith("smsp__pcsamp_warps_issue_stalled_") and not m.endswith("selected")
            }
            top = max(stalls, key=stalls.__getitem__, default=None)
            excess = h.get("derived__memory_l1_wavefronts_shared_excessive")
            out.append(
                (
                    str(k.launch),
                    f"{os.path.basename(h['file'])}:{h['line']}",
                    _count(h.get("smsp__pcsamp_sample_count")),
                    f"{top} {_count(stalls[top])}" if top else "-",
                    _count(h.get("memory_l2_theoretical_sectors_local")),
                    _count(excess),
                    h.get("code", ""),
                )
            )
    return out


def measured_finding_rows(summary: dict) -> list[tuple[str, str, str, str, str]]:
    """(severity, id, "#launch file:line", title, fix) per measured finding of an ncu summary."""
    rows = []
    for f in summary.get("findings", []):
        where = f" {os.path.basename(f['file'])}:{f['line']}" if f.get("line") else ""
        where = f"#{f['evidence'].get('launch')}{where}"
        rows.append((f["severity"], f["id"], where, f["title"], f["fix"]))
    return rows


NO_MEASURED_FINDINGS = "no measured findings (no spill, bank conflicts or low occupancy)"


def measured_finding_lines(summary: dict) -> str:
    lines = [
        f"[{severity}] {id} {where}\n    {title}\n    fix: {fix}"
        for severity, id, where, title, fix in measured_finding_rows(summary)
    ]
    return "\n".join(lines) or NO_MEASURED_FINDINGS


def no_profile_line(kernel: str) -> str:
    return (
        f"no profile stored for {kernel}: run `python -m workbench profile {kernel}` on a GPU "
        f"host, or read a saved report here with `python -m workbench profile --import FILE`"
    )


def _count(x: float | None) -> str:
    return "-" if x is None else f"{round(x):,}"


def outcome_lines(outcome: Outcome, problem: Problem | None, suffix: str = "") -> list[str]:
    """The closing lines of a finished job: its problem, a store failure, its run id and time."""
    lines = [f"[{outcome.status}] {problem}"] if problem else []
    if outcome.store_problem:
        lines.append(f"not saved: {outcome.store_problem}")
    lines.append(f"run {outcome.run_id} in {outcome.seconds:.1f} s{suffix}")
    return lines
