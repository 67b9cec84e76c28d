"""`workbench cache [NAME]`, `cache verify NAME`, `cache clear [NAME]`: the cache doctor.

Scanning and clearing are pure file work in this process; recomputing a kernel's keys (and, on a
GPU, re-timing its tunings) runs in a child job, so this process never imports triton.
"""

from __future__ import annotations

import argparse

from workbench.app import start
from workbench.cache import clear
from workbench.cache.report import owned_entries
from workbench.catalog.discovery import discover
from workbench.cli.options import add_arch_option, add_command_options
from workbench.diagnosis.finding import Finding
from workbench.run import machine
from workbench.runtime.errors import fail
from workbench.views.cache import foreign_line, report_text
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
    add_arch_option(p, "recompute the keys")
    p.add_argument("--stale-only", action="store_true", help="clear: only stale entries")
    p.add_argument("--autotune-only", action="store_true", help="clear: only autotune results")
    p.add_argument("--yes", action="store_true", help="clear: remove (default: a dry run)")
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    words = list(args.words)
    action = words.pop(0) if words and words[0] in ACTIONS else "show"
    if len(words) > 1:
        raise fail("bad-arguments", f"unexpected {' '.join(words[1:])}", "give one kernel NAME")
    name = words[0] if words else None
    if action == "verify" and not name:
        raise fail("bad-arguments", "cache verify needs a kernel NAME", "cache verify NAME")
    entry = discover(args.path).find(name) if name else None
    if action == "verify" and not machine.has_gpu():
        raise fail(
            "needs-gpu",
            machine.needs_gpu_message("cache verify"),
            "`workbench cache NAME` shows the keys and entries without re-timing them",
            source="usage",
        )
    report = start.cache(args.dir, entry, args.arch, verify=action == "verify")
    if action == "clear":
        return _clear(args, report)
    if args.json:
        print_json(report)
    else:
        print(report_text(report))
    return 1 if report.get("problem") else 0


def _clear(args: argparse.Namespace, report: dict) -> int:
    if report["kernel"] and report.get("reach") is None:
        raise fail(
            "cache-no-keys",
            f"could not recompute {report['kernel']}'s keys: "
            f"{(report.get('problem') or {}).get('cause')}",
            "fix that, then clear again",
        )
    owned = owned_entries(report) if report["kernel"] else None
    found = [Finding.from_dict(f) for f in report["findings"]]
    removals = clear.plan(found, args.stale_only, args.autotune_only, owned)
    result = clear.execute(report["scan"]["root"], removals, dry_run=not args.yes)
    if args.json:
        print_json({"clear": result.to_dict(), "findings": report["findings"]})
        return 0
    kept = {s["path"] for s in result.skipped}
    going = result.removed if args.yes else [r.path for r in removals if r.path not in kept]
    rows = [(r.path, r.size, r.reason) for r in removals if r.path not in kept]
    print(table(("path", "bytes", "why"), rows) if rows else "nothing to remove")
    size = sum(r.size for r in removals if r.path in going)
    verb = "removed" if args.yes else "would remove"
    print(f"\n{verb} {len(going)} path(s), {size} bytes under {result.root}")
    for s in result.skipped:
        print(f"  kept {s['path']}: {s['why']}")
    if report["scan"].get("foreign_count"):
        print(foreign_line(report["scan"]))
    if not args.yes and going:
        print("dry run: add --yes to remove them")
    return 0


# END
