"""A cache report's part about one kernel, as lines: the keys its inputs are served and what each
autotune entry of it is (served or unreachable), as `workbench cache NAME` prints them under its
tables (`views.cache.report_text`), and which entries of the scan are the kernel's own.

The report stays the dict `cache --json` prints (`cache.report.build_report` makes it in this
process, around the job); its `reach` is the cache job's result, read back typed here."""

from __future__ import annotations

from workbench.cache.result import CacheReach


def reach_of(report: dict) -> CacheReach | None:
    """The report's recomputed keys; None without a kernel, or when its job sent none."""
    reach = report.get("reach")
    return CacheReach.from_dict(reach) if reach else None


def reach_lines(reach: CacheReach | None) -> list[str]:
    if reach is None:
        return []
    lines = [f"{reach.kernel} on Triton {reach.triton_version}, sm_{reach.arch}:"]
    for k in reach.keys:
        lines.append(f"  {k['kernel']} key {tuple(k['key'])} <- {', '.join(k['inputs'])}")
    for a in reach.autotune:
        lines.append(f"  {a['path']}: {'served' if a['reachable'] else 'unreachable'}")
    for v in reach.verify:
        lines.append(
            f"  verify {v['kernel']} {tuple(v['key'])}: {v['status']}, "
            f"{'STALE' if v['stale'] else 'ok'} (served {v['served']['config']})"
        )
    return lines


def own_functions(reach: CacheReach | None) -> set[str] | None:
    """The kernel's Triton functions (whose entries are its own); None without its keys."""
    return {f["name"] for f in reach.functions} if reach else None
