"""Remove exactly the paths a plan names, only inside the cache root, safely beside a compiler.

Each path is first renamed (atomic) to a hidden name at the root and then deleted, so a process
compiling at that moment sees either the whole entry or none (Triton recreates a missing dir).
Directories written in the last `BUSY_S` seconds are left alone: a compile may be filling them
(single files, such as autotune results, are written atomically by Triton).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.cache import layout
from workbench.diagnosis.finding import Finding
from workbench.runtime.errors import fail

BUSY_S = 60.0
TRASH_PREFIX = ".workbench-trash-"


@dataclass
class Removal:
    path: str
    """Relative to the cache root."""
    size: int
    reason: str


@dataclass
class ClearResult:
    root: str
    planned: list[Removal]
    dry_run: bool
    removed: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    """[{"path", "why"}]: busy entries, vanished ones, permission errors."""

    @property
    def freed(self) -> int:
        sizes = {r.path: r.size for r in self.planned}
        return sum(sizes[p] for p in self.removed)

    def to_dict(self) -> dict:
        return {**asdict(self), "freed": self.freed}


def plan(
    findings: list[Finding],
    stale_only: bool,
    autotune_only: bool,
    owned: list[tuple[str, int]] | None = None,
) -> list[Removal]:
    """What to remove: the stale findings' paths, or (`owned`, for `clear NAME`) every entry of
    the kernel with them; `autotune_only` keeps only `.autotune.json` files."""
    chosen: dict[str, Removal] = {}
    for f in findings:
        stale, remove = f.evidence.get("stale"), f.evidence.get("remove")
        if stale and remove:
            each = f.evidence.get("bytes", 0) // len(remove)
            for p in remove:
                chosen.setdefault(p, Removal(p, each, f.id))
    if not stale_only and owned is not None:
        for p, size in owned:
            chosen.setdefault(p, Removal(p, size, "kernel-entry"))
    out = list(chosen.values())
    if autotune_only:
        out = [r for r in out if r.path.endswith(".autotune.json")]
    return sorted(out, key=lambda r: r.path)


def execute(
    root: str, removals: list[Removal], dry_run: bool, now: float | None = None
) -> ClearResult:
    base = Path(root).resolve()
    layout.check_root(base)
    result = ClearResult(str(base), removals, dry_run)
    targets = [(r, inside(base, r.path)) for r in removals]  # refuse before removing anything
    now = time.time() if now is None else now
    for removal, target in targets:
        foreign = layout.not_triton(base, target) if target.exists() else None
        if foreign:  # whatever the plan says, only Triton's own files go
            result.skipped.append({"path": removal.path, "why": f"left alone: {foreign}"})
            continue
        if dry_run:
            continue
        if not target.exists():
            result.skipped.append({"path": removal.path, "why": "already gone"})
            continue
        if target.is_dir() and now - _newest(target) < BUSY_S:  # files are written atomically
            result.skipped.append({"path": removal.path, "why": f"written < {BUSY_S:.0f} s ago"})
            continue
        try:
            _remove(base, target)
        except OSError as exc:
            result.skipped.append({"path": removal.path, "why": f"{exc.strerror}: {exc.filename}"})
            continue
        result.removed.append(removal.path)
    return result


def inside(base: Path, rel: str) -> Path:
    """`base/rel`, refused unless it lies strictly inside `base` (symlinks resolved)."""
    target = (base / rel).resolve()
    if target == base or base not in target.parents or (base / rel).is_symlink():
        raise fail(
            "outside-cache",
            f"{rel} is not inside the cache directory {base}",
            "nothing was removed; clear only paths under the cache (see `cache --json`)",
            source="environment",
        )
    return target


def _remove(base: Path, target: Path) -> None:
    trash = base / f"{TRASH_PREFIX}{uuid.uuid4().hex}"
    os.rename(target, trash)
    if trash.is_dir():
        shutil.rmtree(trash)
    else:
        trash.unlink()
    parent = target.parent
    if parent != base and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()  # an autotune file's own key dir


def _newest(path: Path) -> float:
    times = [path.stat().st_mtime]
    for folder, _, names in os.walk(path):  # links are not followed
        times += [os.lstat(os.path.join(folder, n)).st_mtime for n in names]
    return max(times)
