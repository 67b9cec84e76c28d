"""`workbench cache [NAME]`, `cache verify NAME`, `cache clear [NAME]`: the cache doctor.

Scanning and clearing are pure file work in this process; recomputing a kernel's keys (and, on a
GPU, re-timing its tunings) runs in a child job, so this process never imports triton.
"""

from __future__ import annotations

import argparse
import time
from importlib import metadata

from workbench.cache import clear, findings, rows, scan, static
from workbench.catalog.discovery import discover
from workbench.cli.options import add_json_option, add_path_option
from workbench.run import jobs, machine
from workbench.runtime.errors import fail
from workbench.views.text import print_json, table

ACTIONS = ("verify", "clear")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="Triton's compile and autotune caches: entries, stale findings, verify, clear",
        description="cache [NAME] | cache verify NAME | cache clear [NAME] "
        "[--stale-only] [--autotune-only] [--yes]",
    )
    p.add_argument("words", nargs="*", metavar="[verify|clear] [NAME]")
    p.add_argument("--dir", help="the cache (default TRITON_CACHE_DIR or ~/.triton/cache)")
    p.add_argument("--arch", type=int, help="arch for the key recomputation (default: GPU or 90)")
    p.add_argument("--stale-only", action="store_true", help="clear: only stale entries")
    p.add_argument("--autotune-only", action="store_true", help="clear: only autotune results")
    p.add_argument("--yes", action="store_true", help="clear: remove (default: a dry run)")
    add_path_option(p)
    add_json_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    words = list(args.words)
    action = words.pop(0) if words and words[0] in ACTIONS else "show"
    if len(words) > 1:
        raise fail("bad-arguments", f"unexpected {' '.join(words[1:])}", "give one kernel NAME")
    name = words[0] if words else None
    if action == "verify" and not name:
        raise fail("bad-arguments", "cache verify needs a kernel NAME", "cache verify NAME")
    report = build_report(args, name, verify=action == "verify")
    if action == "clear":
        return _clear(args, report)
    if args.json:
        print_json(report)
    else:
        print(report_text(report))
    return 1 if report.get("problem") else 0


def installed_triton() -> str | None:
    """The installed Triton's version, read from its metadata (no import)."""
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def build_report(args: argparse.Namespace, name: str | None, verify: bool = False) -> dict:
    root = args.dir or scan.default_root()
    found = scan.scan(root)
    version = installed_triton()
    report: dict = {
        "scan": found.to_dict(),
        "triton": version,
        "kernel": name,
        "problem": None,
        "findings": findings.scan_findings(found, version),
        "reach": None,
    }
    if name is None:
        return report
    entry = discover(args.path).find(name)
    source = open(entry.file).read()
    report["findings"] += static.findings(source, entry.file, version)
    tuned = [
        {**t.__dict__, "path": findings.tuned_path(t.dir, t.kernel)} for t in found.tuned if t.key
    ]
    params = {"file": entry.file, "tuned": tuned, "arch": args.arch, "verify": verify}
    if verify and not machine.has_gpu():
        report["problem"] = {
            "cause": "verify re-times configs: it needs a GPU",
            "remedy": "run `cache verify` on the GPU host",
        }
    outcome = jobs.run_job(jobs.Job("cache", entry, params, timeout=1800 if verify else 600))
    if outcome.problem:
        report["problem"] = outcome.problem.to_dict()
        return report
    reach = outcome.result or {}
    report["reach"] = reach
    report["findings"] += findings.reach_findings(found, reach)
    report["findings"] += findings.measured_findings(reach.get("verify", []))
    return report


def owned_entries(report: dict) -> list[tuple[str, int]]:
    """Every entry of the report's kernel: its functions' compiled dirs and autotune files."""
    reach = report.get("reach") or {}
    names = {f["name"] for f in reach.get("functions", [])}
    found = report["scan"]
    out = [(c["dir"], c["size"]) for c in found["compiled"] if c["name"] in names]
    out += [
        (findings.tuned_path(t["dir"], t["kernel"]), t["size"])
        for t in found["tuned"]
        if t["kernel"] in names
    ]
    return out


def _clear(args: argparse.Namespace, report: dict) -> int:
    if report["kernel"] and report.get("reach") is None:
        raise fail(
            "cache-no-keys",
            f"could not recompute {report['kernel']}'s keys: "
            f"{(report.get('problem') or {}).get('cause')}",
            "fix that, then clear again",
        )
    owned = owned_entries(report) if report["kernel"] else None
    removals = clear.plan(report["findings"], args.stale_only, args.autotune_only, owned)
    result = clear.execute(report["scan"]["root"], removals, dry_run=not args.yes)
    if args.json:
        print_json({"clear": result.to_dict(), "findings": report["findings"]})
        return 0
    verb = "removed" if args.yes else "would remove"
    rows = [(r.path, r.size, r.reason) for r in removals]
    print(table(("path", "bytes", "why"), rows) if rows else "nothing to remove")
    size = result.freed if args.yes else sum(r.size for r in removals)
    print(
        f"\n{verb} {len(result.removed) if args.yes else len(removals)} path(s), {size} bytes "
        f"under {result.root}"
    )
    for s in result.skipped:
        print(f"  kept {s['path']}: {s['why']}")
    if not args.yes and removals:
        print("dry run: add --yes to remove them")
    return 0


def report_text(report: dict) -> str:
    s = report["scan"]
    now = time.time()
    lines = [rows.summary_line(report)]
    if s["compiled"]:
        lines += [
            "",
            table(rows.COMPILED_HEADERS, [rows.compiled_row(c, now) for c in s["compiled"]]),
        ]
    if s["tuned"]:
        lines += ["", table(rows.TUNED_HEADERS, [rows.tuned_row(t, now) for t in s["tuned"]])]
    reach = report.get("reach")
    if reach:
        lines += [
            "",
            f"{report['kernel']} on Triton {reach['triton_version']}, sm_{reach['arch']}:",
        ]
        for k in reach["keys"]:
            lines.append(f"  {k['kernel']} key {tuple(k['key'])} <- {', '.join(k['inputs'])}")
        for a in reach["autotune"]:
            state = "served" if a["reachable"] else "unreachable"
            lines.append(f"  {a['path']}: {state}")
        for v in reach.get("verify", []):
            lines.append(
                f"  verify {v['kernel']} {tuple(v['key'])}: {v['status']}, "
                f"{'STALE' if v['stale'] else 'ok'} (served {v['served']['config']})"
            )
    if report.get("problem"):
        p = report["problem"]
        lines += ["", f"problem: {p['cause']}\n  remedy: {p['remedy']}"]
    lines += ["", rows.finding_text(report["findings"])]
    return "\n".join(lines)
