"""What went wrong in an ncu or nsys run, read from the tool's own output (pure logic).

Each pattern below was seen in real output of ncu 2025.3.1 and its bundled nsys; the Problem
names the cause and the remedy. The order matters: a permission error also ends with "no kernels
were profiled", and the specific cause is the useful one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.runtime.errors import Problem

PERM_URL = (
    "https://developer.nvidia.com/nvidia-development-tools-solutions-"
    "ERR_NVGPUCTRPERM-permission-issue-performance-counters"
)


@dataclass(frozen=True)
class Filters:
    """What the profiler was told to look at, for messages that say why nothing matched."""

    nvtx: tuple[str, ...] = ()
    kernel: str | None = None
    launch_count: int | None = None

    def describe(self) -> str:
        parts = [f"NVTX include {', '.join(self.nvtx)}"] if self.nvtx else []
        if self.kernel:
            parts.append(f"kernel name {self.kernel}")
        return " and ".join(parts) or "no filter"


def available_kernels(text: str) -> list[str]:
    """The kernel names ncu lists after "Available Kernels:" when a filter matched none."""
    names: list[str] = []
    listing = False
    for line in text.splitlines():
        if "Available Kernels" in line:
            listing = True
            continue
        if listing:
            m = re.match(r"^\s*(?:==\w+==\s*)?\d+\.\s+(\S.*?)\s*$", line)
            if not m:
                break
            names.append(m.group(1))
    return names


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:]


def _error_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.lstrip().startswith("==ERROR==")]


def classify(
    text: str, tool: str, filters: Filters | None = None, launched: list[str] | None = None
) -> Problem | None:
    """The Problem the tool's output describes, or None when it reports no failure."""
    if "ERR_NVGPUCTRPERM" in text:
        return Problem(
            "counters-permission",
            f"{tool} may not read the GPU performance counters (ERR_NVGPUCTRPERM): profiling "
            "is restricted to administrators on this machine",
            "run as root or with CAP_SYS_ADMIN (CAP_PERFMON on recent drivers; in a container "
            "--cap-add=SYS_ADMIN), or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
            f"(see {PERM_URL}); `nsys` timelines still work without it",
            detail=_tail(text),
        )
    m = re.search(r"Failed to find metric\s+(\S+)", text)
    if m:
        metric = m.group(1).removeprefix("regex:").strip("^$")
        metric = re.sub(r"\\\.\(.*$", "", metric)  # ncu widens "name" to "name\.(sum|...)$"
        derived = metric.startswith("derived__")
        return Problem(
            "unknown-metric",
            f"ncu does not know the metric {metric!r} on this GPU, so it stopped the program "
            "before profiling anything",
            "derived__* metrics come only from sections (use --preset memory or full)"
            if derived
            else "check the name with `ncu --query-metrics` (names are per GPU architecture) "
            "or drop it from --metrics",
            detail=_tail(text),
        )
    if "LibraryNotLoaded" in text or "Failed to initialize the profiler" in text:
        return Problem(
            "counters-unavailable",
            f"{tool} could not load its profiling library: performance counters are not "
            "available here (a sandbox, WSL2 or a cloud VM that hides them)",
            "profile on a host with direct GPU access, or use nsys (no counters needed)",
            detail=_tail(text),
        )
    if re.search(r"lib(dw|elf)\.so\.1: cannot open shared object file", text) or (
        "Unable to retrieve the importer version" in text or "Importer error status" in text
    ):
        return Problem(
            "nsys-importer",
            "nsys recorded the trace but its importer could not turn the .qdstrm into a report: "
            "the libraries libdw.so.1 and libelf.so.1 are missing",
            "install them (apt-get install libdw1 libelf1), or unpack those .deb files "
            "(`dpkg-deb -x`) into a folder and put its usr/lib/x86_64-linux-gnu on "
            "LD_LIBRARY_PATH",
            detail=_tail(text),
        )
    if "No kernels were profiled" in text:
        listed = available_kernels(text)
        if listed:
            ran = f"kernels that ran: {', '.join(listed)}"
        else:
            ran = (
                f"the spec's Triton kernels: {', '.join(launched) if launched else 'not declared'}"
            )
        return Problem(
            "no-kernels-profiled",
            f"ncu profiled no kernel: nothing matched {(filters or Filters()).describe()} ({ran})",
            "check that the kernel's launches happen inside the range and that the kernel name "
            "filter matches (Triton names kernels after their Python function); "
            "a program that crashed before the range also gives this",
            detail=_tail(text),
        )
    m = re.search(r"Exportation error: (.*)", text)
    if m:  # nsys could not read its own report
        return report_problem("the .nsys-rep", m.group(1).strip())
    if tool == "nsys" and re.search(r"^\s*(Error|ERROR)\b", text, re.M):
        line = next(ln for ln in text.splitlines() if re.match(r"^\s*(Error|ERROR)\b", ln))
        return Problem(
            "tool-error", f"nsys failed: {line.strip()}", "read the run log", detail=_tail(text)
        )
    errors = [e for e in _error_lines(text) if "returned an error code" not in e]
    if errors:
        return Problem(
            "tool-error",
            f"{tool} failed: {errors[0].removeprefix('==ERROR==').strip()}",
            "read the run log for the tool's full output",
            detail=_tail(text),
        )
    return None


def timeout_problem(tool: str, seconds: float, launches: int | None) -> Problem:
    what = f"{launches} kernel launch(es)" if launches else "the kernel launches"
    return Problem(
        "timeout",
        f"the {tool} run passed its {seconds:g} s limit and was stopped; {tool} replays "
        f"{what} many times (one pass per group of counters)",
        "profile fewer launches (--repeats 1, --launch-count), a smaller --config or the quick "
        "preset, or raise --timeout",
    )


def report_problem(path: str, reason: str) -> Problem:
    return Problem(
        "corrupt-report",
        f"{path} cannot be read as a report: {reason}",
        "the file is truncated or damaged (a profiler killed while writing, or a partial "
        "copy): profile again, or copy the whole file",
        file=path,
    )
