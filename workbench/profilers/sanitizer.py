"""compute-sanitizer around a check: find it, wrap the worker in it (as ncu wraps it), and read
its text report into the check's access records at the kernel's Python lines.

`check NAME --sanitize memcheck|racecheck|initcheck|synccheck` runs the check job under the
tool with PyTorch's caching allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1: each tensor its own
cudaMalloc, so an access past a tensor's end is past an allocation's end), on the check's
smallest cases (the tools run kernels 10-100x slower) and only on the spec's Triton kernels
(`--kernel-name kns=NAME`; all of them for initcheck, which must see PyTorch's kernels write the
inputs to know them initialised). The check itself runs without guard regions there (memcheck must
see the real ends) and, for initcheck, without poisoning fresh outputs. Triton compiles with
line info, so each report names the kernel's file and line:

    ========= Invalid __global__ write of size 4 bytes
    =========     at _scale_le_kernel+0x1c0 in /path/pitfall_off_by_one.py:30
    =========     by thread (104,0,0) in block (0,0,0)
    =========     Address 0x7f3c2e000fa0 is out of bounds
    =========     and is 1 bytes after the nearest allocation at 0x7f3c2e000000 of size 4000 bytes

`parse` reads memcheck's invalid accesses, initcheck's uninitialised reads, racecheck's
analysis ("Race reported between Write access at ... and Read access at ... [N hazards]") and
hazard reports, and synccheck's barrier errors, the documented text format of each.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from workbench.catalog.discovery import KernelEntry
from workbench.check import access
from workbench.check.result import CheckReport
from workbench.profilers.launch import PLACEHOLDER
from workbench.profilers.names import jit_kernel_names
from workbench.profilers.tools import Tool, version
from workbench.run import jobs, machine
from workbench.run.params import CheckParams
from workbench.runtime.errors import fail

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
ENV = "WORKBENCH_COMPUTE_SANITIZER"
NAME = "compute-sanitizer"
LOG = "sanitizer.log"
PADDING = 64
"""memcheck's --padding: bytes of never-valid memory after each allocation, so that a write
past a tensor's end into the next cudaMalloc is still out of bounds."""
PRINT_LIMIT = 1000


def candidates(env: Mapping[str, str] | None = None, root: Path = Path("/usr/local")) -> list[str]:
    """Where compute-sanitizer is looked for, best first (the override variable aside): PATH,
    CUDA_HOME/bin, /usr/local/cuda/bin, then /usr/local/cuda-*/bin, newest first."""
    env = os.environ if env is None else env
    found = []
    on_path = shutil.which(NAME, path=env.get("PATH", os.defpath))
    if on_path:
        found.append(on_path)
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home:
        found.append(str(Path(home) / "bin" / NAME))
    found.append(str(root / "cuda" / "bin" / NAME))
    versioned = sorted(root.glob("cuda-*"), key=_version_key, reverse=True)
    found += [str(p / "bin" / NAME) for p in versioned]
    return list(dict.fromkeys(found))


def _version_key(folder: Path) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", folder.name[5:]))


def find(env: Mapping[str, str] | None = None, root: Path = Path("/usr/local")) -> Tool:
    """The compute-sanitizer to run, or a `tool-missing` error naming every place tried."""
    env = os.environ if env is None else env
    override = env.get(ENV)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise fail(
                "tool-missing",
                f"{ENV}={override} is not an executable file",
                f"point {ENV} at compute-sanitizer, or unset it to search PATH and CUDA installs",
                source="environment",
            )
        return Tool(NAME, override, version(override), ENV)
    tried = candidates(env, root)
    for path in tried:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return Tool(NAME, path, version(path), "PATH" if path == tried[0] else path)
    raise fail(
        "tool-missing",
        f"{NAME} was not found (tried: {', '.join(tried)})",
        f"install the CUDA toolkit's compute-sanitizer (the cuda-sanitizer package), or set "
        f"{ENV}=/path/to/{NAME}",
        source="environment",
    )


def command(path: str, tool: str, kernels: list[str]) -> list[str]:
    """The wrapper before the worker's command line; `{run_dir}` stands for the run's folder."""
    if tool not in TOOLS:
        raise fail(
            "unknown-tool",
            f"--sanitize {tool}: compute-sanitizer has no tool {tool!r}",
            f"use one of: {', '.join(TOOLS)}",
            source="usage",
        )
    cmd = ["env", "PYTORCH_NO_CUDA_MEMORY_CACHING=1", path, "--tool", tool]
    cmd += ["--log-file", f"{PLACEHOLDER}/{LOG}", "--print-limit", str(PRINT_LIMIT)]
    cmd += ["--show-backtrace", "no", "--report-api-errors", "no", "--target-processes", "all"]
    for name in kernels if tool != "initcheck" else ():  # it must see every kernel's writes
        cmd += ["--kernel-name", f"kns={name}"]
    if tool == "memcheck":
        cmd += ["--padding", str(PADDING)]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "analysis"]
    return cmd


def sanitized_check(
    entry: KernelEntry,
    tool: str,
    params: CheckParams,
    timeout: float,
    on_event: jobs.OnEvent | None = None,
    cancel: threading.Event | None = None,
) -> jobs.Outcome:
    """The check job under compute-sanitizer; its report is read into the check's result
    (`CheckReport.sanitizer`) before the run is stored."""
    if not machine.has_gpu():
        raise fail(
            "needs-gpu",
            f"`--sanitize {tool}` runs compute-sanitizer, which needs a CUDA GPU; this machine "
            "has none",
            "run it on a GPU host; here, `check` already watches every access in the "
            "interpreter (out-of-bounds loads and stores, reads of unwritten memory)",
            source="usage",
        )
    found = find()
    kernels = jit_kernel_names(entry.file, entry.name)
    wrap = command(found.path, tool, kernels)
    launcher = [sys.executable, "-m", "workbench.profilers.launch"]
    job = jobs.Job("check", entry, replace(params, sanitize=tool), timeout=timeout)

    def read_report(outcome: jobs.Outcome) -> None:
        log = Path(outcome.run_dir) / LOG
        text = log.read_text(errors="replace") if log.is_file() else ""
        report = parse(text, tool, [entry.file])
        report |= {"command": wrap, "path": found.path, "version": found.version, "log": str(log)}
        if not text:
            report["missing"] = f"{NAME} wrote no report to {log}"
        if outcome.result is not None:
            checked = CheckReport.from_dict(outcome.result)
        elif report["accesses"]:  # the fault the tool caught ended the check: it is the result
            checked = CheckReport(entry.name, "cuda", "gpu")
        else:
            return
        checked.sanitizer = report
        outcome.result = checked.to_dict()

    return jobs.run_job(job, on_event, cancel, wrap=launcher + wrap, finish=read_report)


# ---- the report --------------------------------------------------------------------------------

_PREFIX = re.compile(r"^=+ ?")
_LOC = r"(?P<fn>[^\s+][^+]*?)\+0x[0-9a-fA-F]+ in (?P<file>[^\s:]+):(?P<line>\d+)"
_OLD_LOC = r"0x[0-9a-fA-F]+ in (?P<ofile>[^\s:]+):(?P<oline>\d+):(?P<ofn>\S+)"
"""The location of an access: `kernel+0xOFFSET in FILE:LINE`, or cuda-memcheck's older
`0xOFFSET in FILE:LINE:kernel`."""
_AT = re.compile(rf"\bat (?:{_LOC}|{_OLD_LOC})")
_INVALID = re.compile(
    r"Invalid (?P<space>__\w+__) (?P<op>read|write|atomic) of size (?P<size>\d+)(?: bytes)?"
)
_UNINIT = re.compile(r"Uninitialized (?P<space>__\w+__) memory read of size (?P<size>\d+)")
_NEAREST = re.compile(
    r"is (?P<bytes>[\d,]+) bytes (?P<side>after|before) the nearest allocation at "
    r"(?P<base>0x[0-9a-fA-F]+) of size (?P<alloc>[\d,]+) bytes"
)
_ADDRESS = re.compile(r"Address (?P<addr>0x[0-9a-fA-F]+)(?: is (?P<what>[\w -]+))?")
_THREAD = re.compile(r"by thread \((?P<t>[\d, ]+)\) in block \((?P<b>[\d, ]+)\)")
_RACE = re.compile(r"Race reported between")
_HAZARD = re.compile(r"Potential (?P<type>RAW|WAR|WAW) hazard detected")
_ACCESS = re.compile(
    rf"(?P<op>Write|Read) (?:access|Thread \([\d, ]+\)) at\s+(?:{_LOC}|{_OLD_LOC})"
)
_HAZARDS = re.compile(r"\[(?P<n>[\d,]+) hazards?\]")
_BARRIER = re.compile(r"Barrier error detected\.?\s*(?P<what>.*)")
_SUMMARY = re.compile(r"ERROR SUMMARY: (?P<n>[\d,]+) errors?")
_RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY: (?P<n>[\d,]+) hazards? displayed(?: \((?P<errors>[\d,]+) errors?)?"
)
_SKIPPED = re.compile(r"(?P<n>[\d,]+) errors? were skipped")
_OVERFLOW = "Error buffer overflow has been detected"
"""The tool's error buffer filled: it says so per launch and counts what it dropped."""
_FAILED = ("process didn't terminate successfully", "Target application returned an error")
"""The checked process failed (the fault the tool caught ended it): said once, as `failed`."""
SHOWN = 10


def blocks(text: str) -> list[list[str]]:
    """The report's messages: a line that starts at the prefix's margin opens one, indented
    lines carry on, a bare prefix line ends it."""
    out: list[list[str]] = []
    current: list[str] | None = None
    for raw in text.splitlines():
        if not raw.startswith("="):
            continue
        line = _PREFIX.sub("", raw, count=1)
        if not line.strip():
            current = None
        elif line[0] != " " or current is None:
            current = [line.strip()]
            out.append(current)
        else:
            current.append(line.strip())
    return out


def parse(text: str, tool: str, files: list[str] | None = None) -> dict:
    """The report as {"tool", "errors" (its ERROR SUMMARY, None without one), "accesses"
    (`check.access` records, one per kind, site and line), "other" (first lines of messages it
    does not read)}. `files` resolves a file the report names by its base name only."""
    by_name = {Path(f).name: f for f in files or []}
    records: list[dict] = []
    other: list[str] = []
    errors = hazards = None
    skipped, failed = 0, False
    for block in blocks(text):
        joined = " ".join(block)
        if m := _SUMMARY.search(joined):
            errors = _int(m.group("n"))
            continue
        if m := _SKIPPED.search(joined):
            skipped += _int(m.group("n"))
            continue
        if _OVERFLOW in joined:
            continue
        if any(said in joined for said in _FAILED):
            failed = True
            continue
        if m := _RACE_SUMMARY.search(joined):  # racecheck's summary counts its errors too
            hazards = _int(m.group("n"))
            errors = _int(m.group("errors")) if m.group("errors") else errors
            continue
        r = _record(block[0], joined, tool, by_name)
        if r is not None:
            records.append(r)
        elif not joined.startswith(("COMPUTE-SANITIZER", "Saved host backtrace", "Program hit")):
            other.append(joined[:300])
    report = {"tool": tool, "errors": errors, "accesses": access.merge(records)}
    if hazards is not None:
        report["hazards"] = hazards
    if skipped:
        report["skipped"] = skipped  # dropped by the tool: the records kept are a sample
    if failed:
        report["failed"] = True
    if other:
        report["other"] = other[:SHOWN]
    return report


def _record(first: str, text: str, tool: str, by_name: dict[str, str]) -> dict | None:
    """The access record of one message (`first` its opening line, `text` all of it)."""
    if m := _INVALID.search(first):
        kind = "read" if m.group("op") == "read" else "write"
        return _located(kind, text, tool, by_name, int(m.group("size")), m.group("space"))
    if m := _UNINIT.search(first):
        return _located("uninitialised-read", text, tool, by_name, int(m.group("size")),
                        m.group("space"))  # fmt: skip
    if _RACE.search(first) or _HAZARD.search(first):
        sites = [(a.group("op"), _where(a, by_name)) for a in _ACCESS.finditer(text)]
        if not sites:
            return None
        writes = [s for s in sites if s[0] == "Write"] or sites
        file, line, fn = writes[0][1]
        n = sum(_int(h.group("n")) for h in _HAZARDS.finditer(text)) or 1
        kind = _HAZARD.search(first)
        return access.record(
            "race", "sanitizer", "shared memory", n, tool=tool, kernel=fn, file=file, line=line,
            lines=sorted({s[1][1] for s in sites if s[1][1]}),
            detail=(kind.group("type") + " hazard: " if kind else "") + _sites(sites),
        )  # fmt: skip
    if m := _BARRIER.search(first):
        return _located("sync", text, tool, by_name, 0, "barrier", m.group("what").strip())
    return None


def _located(
    kind: str,
    text: str,
    tool: str,
    by_name: dict[str, str],
    size: int,
    space: str | None,
    what: str = "",
) -> dict | None:
    at = _AT.search(text)
    if at is None:
        return None
    file, line, fn = _where(at, by_name)
    extra: dict = {"kernel": fn, "file": file, "line": line, "tool": tool}
    tensor = {"barrier": "a barrier", "__global__": "an allocation", None: "an allocation"}.get(
        space, f"{space} memory"
    )
    if m := _NEAREST.search(text):
        alloc, distance = _int(m.group("alloc")), _int(m.group("bytes"))
        tensor = f"the allocation of {alloc:,} bytes"
        side = "after" if m.group("side") == "after" else "before"
        extra |= {"side": side, "farthest": distance // max(size, 1) + (side == "after")}
    elif (a := _ADDRESS.search(text)) and a.group("what") and "misaligned" in a.group("what"):
        extra["misaligned"] = True
    if t := _THREAD.search(text):
        extra["thread"] = f"thread ({t.group('t')}) in block ({t.group('b')})"
    extra["detail"] = text[:240]
    if what:
        extra["what"] = what
    return access.record(kind, "sanitizer", tensor, 1, **extra)


def _where(m: re.Match, by_name: dict[str, str]) -> tuple[str | None, int | None, str | None]:
    """(file, line, kernel) of a location match, either form; a bare file name that is one of
    the kernel's files resolves to its path."""
    g = m.groupdict()
    file, line, fn = (
        g.get("file") or g.get("ofile"),
        g.get("line") or g.get("oline"),
        g.get("fn") or g.get("ofn"),
    )
    if file and not os.path.isabs(file):
        file = by_name.get(Path(file).name, file)
    return file, int(line) if line else None, (fn or "").strip() or None


def _sites(sites: list[tuple[str, tuple]]) -> str:
    return ", ".join(
        f"{op.lower()} at {Path(str(w[0])).name}:{w[1]}" for op, w in sites if w[0] and w[1]
    )


def _int(text: str) -> int:
    return int(text.replace(",", ""))
