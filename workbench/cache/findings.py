"""Cache findings from a scan, the recomputed keys and the measurements (pure).

Each is a diagnosis `Finding` (one type, one severity scale) whose evidence holds its detail and,
in `remove`, the paths (relative to the cache root) that `cache clear` would delete to carry the
fix out; `stale` ones are what `--stale-only` takes.
"""

from __future__ import annotations

import time

from workbench.cache import keys
from workbench.cache.result import CacheReach
from workbench.cache.scan import CacheScan, Compiled
from workbench.cache.static import finding
from workbench.diagnosis.finding import Finding

TMP_GRACE_S = 3600.0
"""A `tmp.pid_*` dir younger than this, or whose writer lives, may be a write in progress."""


def scan_findings(
    scan: CacheScan, installed: str | None, now: float | None = None
) -> list[Finding]:
    """Finding 4: broken entries, leftovers, entries made by another Triton, moved caches."""
    now = time.time() if now is None else now
    out: list[Finding] = []
    version = keys.version_tuple(installed) if installed else None
    no_binary = _with_problem(scan, ("no-binary", "group-missing"))
    if no_binary:
        raises = version is not None and version <= keys.MISSING_BINARY_RAISES_UNTIL
        effect = (
            f"Triton {installed} raises KeyError: 'cubin' on every run of them"
            if raises
            else "a lookup misses and recompiles them every time"
        )
        out.append(
            _entries(
                "missing-binary",
                "high",
                no_binary,
                f"{len(no_binary)} compiled entr(ies) whose binary is gone: {effect}",
            )
        )
    corrupt = _with_problem(scan, ("corrupt",))
    if corrupt:
        out.append(
            _entries(
                "corrupt-entry",
                "high",
                corrupt,
                f"{len(corrupt)} entr(ies) with an unreadable .json or group file",
            )
        )
    moved = _with_problem(scan, ("group-elsewhere",))
    if moved:
        first = next(p for p in moved[0].problems if p.startswith("group-elsewhere"))
        out.append(
            _entries(
                "group-elsewhere",
                "medium",
                moved,
                f"{len(moved)} group file(s) name files outside their entry ({first}): a cache "
                "copied or moved from elsewhere, so lookups miss or read the other copy",
            )
        )
    if installed:
        other = [c for c in scan.compiled if c.triton_version and c.triton_version != installed]
        if other:
            made = sorted({c.triton_version or "?" for c in other})
            out.append(
                _entries(
                    "other-triton",
                    "info",
                    other,
                    f"{len(other)} entr(ies) made by Triton {', '.join(made)}; {installed} is "
                    "installed, and the Triton version is in every key: none is reachable",
                )
            )
    for kind, title in LEFTOVERS.items():
        found = [lo for lo in scan.leftovers if lo.kind == kind and not _in_progress(lo, now)]
        if found:
            size = sum(lo.size for lo in found)
            out.append(
                finding(
                    f"leftover-{kind}",
                    "medium" if kind == "partial" else "info",
                    f"{len(found)} {title} ({_mb(size)})",
                    ", ".join(lo.path for lo in found[:3]) + (" ..." if len(found) > 3 else ""),
                    "remove them: `cache clear --stale-only --yes`",
                    remove=[lo.path for lo in found],
                    bytes=size,
                    stale=True,
                )
            )
    unreadable = [t for t in scan.tuned if t.problem]
    if unreadable:
        out.append(
            finding(
                "autotune-unreadable",
                "high",
                f"{len(unreadable)} autotune file(s) Triton cannot read",
                f"{tuned_path(unreadable[0].dir, unreadable[0].kernel)}: {unreadable[0].problem}",
                "remove them: `cache clear --stale-only --yes`",
                remove=[tuned_path(t.dir, t.kernel) for t in unreadable],
                bytes=sum(t.size for t in unreadable),
                stale=True,
            )
        )
    return out


LEFTOVERS = {
    "tmp": "temporary dir(s) left by a killed write",
    "partial": "partial entr(ies) left by a failed compile (recompiled on every run)",
    "empty": "empty dir(s)",
    "unreadable": "unreadable dir(s)",
}


def _with_problem(scan: CacheScan, kinds: tuple[str, ...]) -> list[Compiled]:
    """The compiled entries with a problem of one of these kinds (`Compiled.problems`)."""
    return [c for c in scan.compiled if any(p.startswith(kinds) for p in c.problems)]


def reach_findings(scan: CacheScan, reach: CacheReach) -> list[Finding]:
    """Which entries the current kernel is served, and which none can reach any more."""
    out: list[Finding] = []
    names = {f["name"] for f in reach.functions}
    dead = [a for a in reach.autotune if not a["reachable"]]
    if dead:
        size = sum(a["size"] for a in dead)
        out.append(
            finding(
                "autotune-unreachable",
                "medium",
                f"{len(dead)} autotune result(s) of {', '.join(sorted(names))} that no current "
                f"kernel can reach ({_mb(size)})",
                "recomputed with Triton "
                f"{reach.triton_version} from the current source, config list and env vars, "
                f"their keys lead elsewhere (e.g. {dead[0]['path']} -> {dead[0]['expected_dir']})",
                "remove them: `cache clear NAME --stale-only --yes`; the source, the configs or "
                "Triton changed since they were tuned",
                remove=[a["path"] for a in dead],
                bytes=size,
                stale=True,
            )
        )
    served = set(reach.compile_dirs)
    arch = reach.arch
    mine = [c for c in scan.compiled if c.name in names and not c.problems]
    unreached = [
        c
        for c in mine
        if c.dir.rsplit("/", 1)[-1] not in served
        and c.triton_version == reach.triton_version
        and c.arch == arch
    ]
    if unreached:
        out.append(
            _entries(
                "compile-unreached",
                "info",
                unreached,
                f"{len(unreached)} compiled entr(ies) of {', '.join(sorted(names))} for sm_{arch} "
                "that no check or bench input reaches: older source, or other shapes",
                stale=False,
                fix="`cache clear NAME --yes` removes all of this kernel's entries (what is "
                "still needed recompiles)",
            )
        )
    return out


def measured_findings(verify: list[dict]) -> list[Finding]:
    """Findings 1 (a served tuning slower than another config here) and 2 (key too narrow)."""
    out: list[Finding] = []
    for v in verify:
        if v.get("stale"):
            s, f = v["served"], v["fastest"]
            out.append(
                finding(
                    "autotune-served-stale",
                    "high",
                    f"{v['kernel']} key {v['key']}: the served config is "
                    f"{_pct(s['ms'][0], f['ms'][0])} slower than {f['config']} here",
                    f"re-timed on {v['device']}: served {s['config']} p50 {s['ms'][0]:.4g} ms "
                    f"(p20 {s['ms'][1]:.4g}), fastest p50 {f['ms'][0]:.4g} ms (p80 "
                    f"{f['ms'][2]:.4g}); the key has no GPU model, load or clocks in it",
                    f"`cache clear {v['spec']} --autotune-only --yes`, then `cache verify "
                    f"{v['spec']}` re-tunes",
                    remove=[v["path"]] if v.get("path") else [],
                    stale=True,
                )
            )
        for n in v.get("narrow", []):
            out.append(
                finding(
                    "autotune-key-too-narrow",
                    "medium",
                    f"{v['kernel']}: inputs {v['inputs'][0]} and {n['input']} share key "
                    f"{v['key']} but not their best config",
                    f"on {n['input']} the key's pick {n['reused']} takes {n['reused_ms']:.4g} ms, "
                    f"its own best {n['best']} {n['best_ms']:.4g} ms "
                    f"({_pct(n['reused_ms'], n['best_ms'])} slower); they differ in "
                    f"{', '.join(n['differs']) or 'tensor layout only'}",
                    n["fix"],
                )
            )
    return out


def _entries(id_, severity, entries: list[Compiled], title, stale=True, fix=None) -> Finding:
    size = sum(c.size for c in entries)
    return finding(
        id_,
        severity,
        f"{title} ({_mb(size)})",
        ", ".join(f"{c.dir} ({c.name})" for c in entries[:3])
        + (" ..." if len(entries) > 3 else ""),
        fix or "remove them: `cache clear --stale-only --yes`",
        remove=[c.dir for c in entries],
        bytes=size,
        stale=stale,
    )


def _in_progress(leftover, now: float) -> bool:
    return leftover.kind == "tmp" and (leftover.writer_alive or now - leftover.mtime < TMP_GRACE_S)


def tuned_path(dir_: str, kernel: str) -> str:
    return f"{dir_}/{kernel}.autotune.json"


def _mb(size: int) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 10_000 else f"{size} B"


def _pct(slow: float, fast: float) -> str:
    return f"{(slow / fast - 1) * 100:.0f}%" if fast > 0 else "?"
