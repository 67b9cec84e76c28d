"""A cache report's part about one kernel, as lines: the keys its inputs are served and what each
autotune entry of it is (served or unreachable), as `workbench cache NAME` prints them under its
tables (`views.cache.report_text`), and which entries of the scan are the kernel's own."""

from __future__ import annotations


def reach_lines(report: dict) -> list[str]:
    reach = report.get("reach")
    if not reach:
        return []
    lines = [f"{report['kernel']} on Triton {reach['triton_version']}, sm_{reach['arch']}:"]
    for k in reach["keys"]:
        lines.append(f"  {k['kernel']} key {tuple(k['key'])} <- {', '.join(k['inputs'])}")
    for a in reach["autotune"]:
        lines.append(f"  {a['path']}: {'served' if a['reachable'] else 'unreachable'}")
    for v in reach.get("verify", []):
        lines.append(
            f"  verify {v['kernel']} {tuple(v['key'])}: {v['status']}, "
            f"{'STALE' if v['stale'] else 'ok'} (served {v['served']['config']})"
        )
    return lines


def own_functions(report: dict) -> set[str] | None:
    """The kernel's Triton functions (whose entries are its own); None without its keys."""
    reach = report.get("reach")
    return {f["name"] for f in reach.get("functions", [])} if reach else None
