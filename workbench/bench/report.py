"""The benchmark report: its schema (bench.json), resuming and merging saved reports, writing
them, and the README.md table.

Pure functions on plain data (no torch): the CLI process builds and writes the report, and CPU
tests check it against a saved GPU result. The arithmetic is `bench.metrics`.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from workbench.bench import clock_rules, timing_rules
from workbench.runtime.errors import fail
from workbench.runtime.grammar import shape_text
from workbench.runtime.outdir import OutDir

SCHEMA = 1


def new_doc() -> dict:
    return {
        "schema": SCHEMA,
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "device": None,
        "ceilings": None,
        "kernels": [],
        "records": [],
        "problems": [],
    }


def resume(doc: dict, redo: frozenset[str] = frozenset()) -> dict:
    """The finished part of a saved report: kernels whose check and bench both ended (well or
    not), with their records; an interrupted kernel's partial records are dropped, and so are
    the kernels named in `redo`."""
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"schema {doc.get('schema')!r}, expected {SCHEMA}")
    kept = [
        k for k in doc["kernels"] if k.get("check") and k.get("bench") and k["name"] not in redo
    ]
    names = {k["name"] for k in kept}
    return {
        **new_doc(),
        "device": doc.get("device"),
        "ceilings": doc.get("ceilings"),
        "kernels": kept,
        "records": [r for r in doc["records"] if r["name"] in names],
    }


def merge(saved: dict, fresh: dict) -> dict:
    """A saved report updated with a fresh run: the fresh run's kernels and records replace those
    of the same name (records: name, shape and dtype) in place, new ones join their kernel's
    rows, and everything else saved stays, a kernel's last full check included. Both must come
    from the same device."""
    if saved.get("schema") != SCHEMA:
        raise ValueError(f"schema {saved.get('schema')!r}, expected {SCHEMA}")
    if saved.get("device") and fresh.get("device") and saved["device"] != fresh["device"]:
        raise ValueError(f"it was measured on {saved['device']}, this run on {fresh['device']}")
    kernels = {k["name"]: k for k in saved["kernels"]}
    for k in fresh["kernels"]:  # a lone bench runs no full check: the last one stays
        old = kernels.get(k["name"], {})
        kernels[k["name"]] = {**k, "check": k.get("check") or old.get("check")}

    def key(r: dict) -> tuple:
        return r["name"], tuple(r["shape"]), r["dtype"]

    new = {key(r): r for r in fresh["records"]}
    records = [new.pop(key(r), r) for r in saved["records"]] + list(new.values())
    order = {name: i for i, name in enumerate(kernels)}
    return {
        **saved,
        "generated": fresh["generated"],
        "device": fresh.get("device") or saved.get("device"),
        "ceilings": fresh.get("ceilings") or saved.get("ceilings"),
        "kernels": list(kernels.values()),
        "records": sorted(records, key=lambda r: order.get(r["name"], len(order))),
    }


def is_clean(doc: dict) -> bool:
    """Every kernel checked correct and benchmarked, and every case ran."""
    kernels = doc.get("kernels", [])
    return (
        bool(kernels)
        and not doc.get("interrupted")
        and all((k.get("check") or {}).get("status") == "correct" for k in kernels)
        and all((k.get("bench") or {}).get("status") == "ok" for k in kernels)
        and all(r.get("status") == "ok" for r in doc.get("records", []))
    )


FILES = ("bench.json", "README.md")


def out_folder(out_dir: str | Path) -> OutDir:
    """The report's --out, refused where a link stands in either file's place (called before
    any kernel runs, and again before writing)."""
    out = OutDir(out_dir, "--out")
    for name in FILES:
        out.check(name)
    return out


def write(doc: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """Write bench.json and README.md into out_dir (each replaced whole, never half-written, and
    never through a link)."""
    out = out_folder(out_dir)
    try:
        json_path = out.put(FILES[0], json.dumps(doc, indent=1, default=str) + "\n")
        md_path = out.put(FILES[1], markdown(doc))
    except OSError as exc:
        raise fail(
            "report-unwritable",
            f"cannot write the benchmark report to {out_dir}: {exc.strerror or exc}",
            "choose a writable folder with --out",
            file=str(out_dir),
        ) from exc
    return json_path, md_path


# ---- markdown -------------------------------------------------------------------------------

TABLE_HEADERS = (
    "kernel",
    "shape",
    "dtype",
    "ms",
    "GB/s",
    "TFLOP/s",
    "roofline",
    "vs copy",
    "bound",
    "vs torch",
    "vs compile",
)


def markdown(doc: dict) -> str:
    """The readable table of a bench.json document."""
    device = doc.get("device") or "unknown device"
    lines = [f"# Benchmarks on {device}", ""]
    ceil = doc.get("ceilings")
    if ceil:
        lines += [ceilings_line(ceil), ""]
    lines += [
        "Times are medians of `triton.testing.do_bench` (L2 flushed before every call; random "
        "inputs, rotated among several sets when they fit in L2), after a correctness check at "
        "the same shape. roofline = floor / time, where floor = max(bytes / copy bandwidth, "
        "FLOPs / matmul rate) with the ceilings measured in the row's own run (above: the "
        "latest, where several runs updated the report); bound names the larger term: compute "
        "exactly when FLOPs / bytes is above the ridge, matmul rate / copy bandwidth. `vs copy` "
        "is the time of a device-to-device copy of the row's own bytes, timed the same way, over "
        "the kernel's (for a memory-bound row: near 1 the kernel moves its bytes as fast as a copy "
        "of that size, and what its roofline lacks is the input's size: launch, ramp-up, tail). "
        "Bytes and FLOPs are the kernel spec's formulas, or else counted: the reference's FLOPs "
        "by torch's FlopCounterMode (matmuls, convolutions, attention, causal halved), the bytes "
        "of its inputs and outputs; bench.json gives each one's source. "
        "`vs torch` and `vs compile` are the eager and `torch.compile`d reference's time over the "
        "kernel's (above 1: the kernel is faster); `torch.compile` runs with static shapes "
        "in its default mode unless a note names another.",
        "",
        "| " + " | ".join(TABLE_HEADERS) + " |",
        "|" + "|".join("---" if i < 3 else "--:" for i in range(len(TABLE_HEADERS))) + "|",
    ]
    notes: list[str] = []
    for rec in doc.get("records", []):
        lines.append("| " + " | ".join(_row(rec, notes)) + " |")
    if not doc.get("records"):
        lines.append("| " + " | ".join(["(no results)"] + [""] * (len(TABLE_HEADERS) - 1)) + " |")
    notes += _kernel_notes(doc)
    devices = sorted({r["device"] for r in doc.get("records", []) if r.get("device")})
    if len(devices) > 1:
        notes.append(f"these results come from several devices: {', '.join(devices)}")
    if doc.get("interrupted"):
        notes.append("interrupted: the kernels after the last one listed did not run")
    notes += [f"{p.get('file') or '-'}: {p.get('cause')}" for p in doc.get("problems", [])]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    lines += ["", f"Generated {doc.get('generated', '')} from bench.json by `workbench bench`.", ""]
    return "\n".join(lines)


def ceilings_line(ceil: dict) -> str:
    by_dtype = ceil.get("matmul_tflops", {})
    mm = ", ".join(
        f"{'float32 (TF32)' if dtype == 'float32' else dtype} {num(tf)} TFLOP/s at {size}³"
        for dtype, by_size in by_dtype.items()
        for size, tf in sorted(by_size.items(), key=lambda kv: -int(kv[0]))
    )
    versions = f"torch {ceil.get('torch', '?')}, Triton {ceil.get('triton', '?')}"
    return (
        f"Measured ceilings: copy {num(ceil['copy_gbps'])} GB/s (device-to-device, bytes read + "
        f"written); `torch.matmul` {mm}. {versions}."
    )


def _row(rec: dict, notes: list[str]) -> list[str]:
    where = f"{rec['name']} {shape_text(rec['shape'])} {rec['dtype']}"
    status = rec.get("status", "ok")
    if status != "ok":
        notes.append(f"{where}: {status.upper()}: {_short(rec.get('reason') or 'see the run log')}")
        blank = [""] * (len(TABLE_HEADERS) - 4)
        return [rec["name"], shape_text(rec["shape"]), rec["dtype"], status.upper(), *blank]
    compile_cell = _speedup(rec.get("speedup_vs_compile"))
    if isinstance(rec.get("speedup_vs_compile"), str):
        notes.append(f"{where}: torch.compile {rec['speedup_vs_compile']}")
    if rec.get("note"):
        notes.append(f"{where}: {rec['note']}")
    clocked = clock_rules.read(rec.get("clocks")), clock_rules.read(rec.get("torch_clocks"))
    if clock_note := clock_rules.case_note(*clocked):
        notes.append(f"{where}: {clock_note}")
    if wide := timing_rules.unsteady(rec["ms"], rec.get("ms_p20"), rec.get("ms_p80")):
        notes.append(f"{where}: {wide}")
    mode = rec.get("compile_mode") or "default"
    mode_note = f"{rec['name']}: `vs compile` is against torch.compile(mode={mode!r})"
    if mode != "default" and mode_note not in notes:
        notes.append(mode_note)
    return [
        rec["name"],
        shape_text(rec["shape"]),
        rec["dtype"],
        num(rec["ms"], 4),
        num(rec.get("gbps")),
        num(rec.get("tflops")),
        ratio(rec.get("roofline_ratio")),
        ratio(rec.get("vs_copy")),
        rec.get("bound") or "-",
        _speedup(rec.get("speedup_vs_torch")),
        compile_cell,
    ]


def _kernel_notes(doc: dict) -> list[str]:
    notes = []
    for k in doc.get("kernels", []):
        check = k.get("check") or {}
        if check and check.get("status") != "correct":
            why = f": {_short(check['reason'])}" if check.get("reason") else ""
            notes.append(f"{k['name']}: check {check.get('status', '?')}{why}")
        bench = k.get("bench") or {}
        if bench and bench.get("status") != "ok":
            why = f": {_short(bench['reason'])}" if bench.get("reason") else ""
            notes.append(f"{k['name']}: bench {bench.get('status')}{why}")
        if doc.get("interrupted") and not bench:
            notes.append(f"{k['name']}: interrupted before it finished")
    return notes


def _short(text: str, limit: int = 160) -> str:
    """The first line, cut to `limit` characters: notes stay one line; bench.json has it all."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _speedup(value: float | str | None) -> str:
    if isinstance(value, str):
        return "n/a"
    return "-" if value is None else f"{value:.2f}x"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def num(value: float | None, digits: int = 3) -> str:
    """Three significant figures, but never scientific notation for big numbers."""
    if value is None:
        return "-"
    if value == 0 or not math.isfinite(value):
        return str(value)
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"
