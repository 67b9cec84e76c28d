"""Memory accesses a kernel must not make, as the check records them (pure: no torch).

Three watchers make one record (a dict) per kind, tensor and line: guard regions
(`check.guards`: a margin byte changed is a write out of bounds, an output holding a margin's
payload a read out of bounds) and the interpreter's bounds (`check.bounds`: every masked offset
against the launch's tensors, loads of never-written memory), in `CaseResult.accesses`; and
compute-sanitizer (`profilers.sanitizer`), in `CheckReport.sanitizer["accesses"]`. Their keys:

- kind: "write" or "read" (out of bounds; "misaligned": true when the address was),
  "uninitialised-read", "race" (shared memory) or "sync" (a barrier misused)
- source: "guards", "interpreter" or "sanitizer" (with "tool": memcheck, racecheck, ...)
- tensor: its argument or allocation name; side: "before" or "after" its extent
- count: elements (or hazards) seen; farthest: elements past the end (or before the start);
  offset, extent: the farthest element's index and the tensor's extent, in elements
- kernel, file, line: where, when known; lines: the candidates when several accesses could be
- via: how a guard payload was seen; detail, what, thread: the sanitizer's own words
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

KINDS = {
    "write": "written out of bounds",
    "read": "read out of bounds",
    "uninitialised-read": "read before anything was written there",
    "race": "shared-memory race",
    "sync": "barrier misuse",
}
WRITES = "writes out of bounds"
READS = "reads out of bounds"
UNINITIALISED = "reads uninitialised memory"
RACES = "races on shared memory"
VERDICTS = {"write": WRITES, "read": READS, "uninitialised-read": UNINITIALISED, "race": RACES}
"""The check's verdict when a case saw an access of the kind, most severe first."""
FIXES = {
    WRITES: "mask every tl.store with the output's own bounds (offs < n_out, not the input's "
    "size), with < and not <=, and size the grid with triton.cdiv",
    READS: "mask every tl.load with the bounds of the tensor it reads (offs + k < n for a "
    "shifted read), with < and not <=, and give other= for the lanes masked off",
    UNINITIALISED: "initialise what the kernel reads before it writes: torch.zeros instead of "
    "torch.empty for an accumulator, or store before loading",
    RACES: "order the shared-memory accesses of different threads with a barrier "
    "(tl.debug_barrier() between the write and the read), or keep the exchange in Triton ops",
}
KEY = ("kind", "tensor", "side", "kernel", "file", "line")


def record(kind: str, source: str, tensor: str, count: int, **more: object) -> dict:
    return {"kind": kind, "source": source, "tensor": tensor, "count": count, **more}


def merge(records: Iterable[dict]) -> list[dict]:
    """One record per kind, tensor, side and line. Several watchers seeing one access make one
    record naming them all ("guards, interpreter") with the larger count; several accesses seen
    by one watcher add up. The farthest element is kept."""
    out: dict[tuple, dict] = {}
    for r in records:
        key = tuple(r.get(k) for k in KEY)
        if key not in out:
            out[key] = dict(r)
            continue
        kept = out[key]
        sources = str(kept["source"]).split(", ")
        if r["source"] in sources:
            kept["count"] = kept.get("count", 0) + r.get("count", 0)
        else:
            kept["source"] = ", ".join([*sources, r["source"]])
            kept["count"] = max(kept.get("count", 0), r.get("count", 0))
        if (r.get("farthest") or 0) > (kept.get("farthest") or 0):
            kept.update(farthest=r["farthest"], offset=r.get("offset"))
        for k, v in r.items():
            kept.setdefault(k, v)
    return list(out.values())


def where(r: dict) -> str:
    if r.get("file") and r.get("line"):
        return f"{Path(str(r['file'])).name}:{r['line']}"
    if r.get("lines"):
        return f"one of lines {', '.join(map(str, r['lines']))}"
    return ""


def describe(r: dict, via: bool = True) -> str:
    """'1 element of y written past its end (offset 1000 of 1000) at k.py:31'."""
    kind: str = r["kind"]
    n = int(r.get("count") or 0)
    if kind in ("write", "read"):
        end = "before its start" if r.get("side") == "before" else "past its end"
        what = f"{n:,} element{'s' * (n != 1)} of {r['tensor']} {KINDS[kind].split()[0]} {end}"
        if r.get("offset") is not None and r.get("extent") is not None:
            what += f" (offset {r['offset']} of {r['extent']})"
        elif r.get("farthest"):
            what += f" (up to {r['farthest']} element{'s' * (r['farthest'] != 1)} away)"
    elif kind == "uninitialised-read":
        what = f"{n:,} element{'s' * (n != 1)} of {r['tensor']} read before anything wrote them"
    elif kind == "race":
        what = f"shared-memory race ({n:,} hazard{'s' * (n != 1)})"
    else:
        what = KINDS.get(kind, kind) + (f": {r['what']}" if r.get("what") else "")
    at = where(r)
    said = what + (f" at {at}" if at else "")
    return said + (f" [{r['via']}]" if via and r.get("via") else "")


def verdict(accesses: Sequence[dict]) -> str | None:
    """The verdict the worst access gives a case (None when there is none)."""
    kinds = {r["kind"] for r in accesses}
    return next((VERDICTS[k] for k in VERDICTS if k in kinds), None)


def across(records: Iterable[dict], shown: int = 6) -> list[str]:
    """One line per kind, tensor, side and line over every case's records (the case with the
    most elements described), saying in how many cases it was seen."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r.get(k) for k in KEY), []).append(r)
    lines = []
    for found in groups.values():
        lead = max(found, key=lambda r: r.get("count") or 0)
        times = f" (in {len(found)} cases)" if len(found) > 1 else ""
        lines.append(describe(lead, via=False) + times)
    return lines[:shown]
