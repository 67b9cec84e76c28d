"""Read a Triton cache directory into data: compiled entries, autotune results, leftovers.

Pure file reading (no triton import). The root holds one directory per key; the workbench's own
jobs keep a cache per kernel file under `<root>/workbench/<hash>`, which is scanned the same way.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.cache import layout
from workbench.cache.layout import WORKBENCH_SUBDIR
from workbench.runtime.errors import fail

BINARY_EXT = {"cuda": "cubin", "hip": "hsaco"}
AUTOTUNE_SUFFIX = ".autotune.json"
FOREIGN_SHOWN = 20


@dataclass
class Compiled:
    """One compiled kernel: a `<name>.json` with the files beside it."""

    dir: str
    """The entry's directory, relative to the scanned root."""
    name: str
    triton_version: str | None
    backend: str | None
    arch: int | str | None
    num_warps: int | None
    num_stages: int | None
    maxnreg: int | None
    shared: int | None
    size: int
    mtime: float
    problems: list[str] = field(default_factory=list)
    """"no-binary", "group-elsewhere: <path>", "group-missing: <file>", "corrupt-json"."""


@dataclass
class Tuned:
    """One persisted autotune result: `<kernel>.autotune.json`."""

    dir: str
    kernel: str
    key: list | None
    timings: list[dict]
    """[{"config": {...}, "ms": [p50, p20, p80]}] in the file's order."""
    best: int | None
    """Index into timings of the config Triton serves (lowest p50, first on ties)."""
    size: int
    mtime: float
    problem: str = ""


@dataclass
class Leftover:
    """Something no lookup reads: a temporary dir, an empty dir, a partial compile."""

    path: str
    kind: str
    """"tmp" (a killed write), "empty", "partial" (a failed compile: files but no .json)."""
    size: int
    mtime: float
    pid: int | None = None
    writer_alive: bool = False


@dataclass
class CacheScan:
    root: str
    compiled: list[Compiled] = field(default_factory=list)
    tuned: list[Tuned] = field(default_factory=list)
    leftovers: list[Leftover] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    """What is not Triton's (the first FOREIGN_SHOWN, relative to the root): left alone."""
    foreign_count: int = 0
    other_size: int = 0
    """Anything at a cache root that is not an entry."""
    total_size: int = 0
    scanned_at: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def default_root(env: dict[str, str] | None = None) -> str:
    """Triton's cache root: TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache (HOME default)."""
    env = dict(os.environ) if env is None else env
    if env.get("TRITON_CACHE_DIR"):
        return env["TRITON_CACHE_DIR"]
    home = env.get("TRITON_HOME") or str(Path.home())
    return os.path.join(home, ".triton", "cache")


def scan(root: str) -> CacheScan:
    base = Path(root)
    if not base.exists():
        raise fail(
            "cache-missing",
            f"the Triton cache {root} does not exist",
            "run a kernel first, or name the cache with --dir (or TRITON_CACHE_DIR)",
            source="environment",
        )
    if not base.is_dir() or not os.access(base, os.R_OK | os.X_OK):
        raise fail(
            "cache-unreadable",
            f"{root} is not a readable directory",
            f"check its permissions (ls -ld {root}) or name another cache with --dir",
            source="environment",
        )
    layout.check_root(base)
    result = CacheScan(root=str(base.resolve()), scanned_at=time.time())
    _scan_root(base, base, result)
    result.total_size = (
        sum(c.size for c in result.compiled)
        + sum(t.size for t in result.tuned)
        + sum(lo.size for lo in result.leftovers)
        + result.other_size
    )
    return result


def _scan_root(base: Path, root: Path, out: CacheScan) -> None:
    for child in _listed(root):
        if layout.is_entry(child):
            _scan_entry(base, child, out)
        elif root == base and child.name == WORKBENCH_SUBDIR and layout.is_real_dir(child):
            for sub in _listed(child):  # the workbench's per-file caches, each a root
                if layout.WORKBENCH_ENTRY.match(sub.name) and layout.is_real_dir(sub):
                    _scan_root(base, sub, out)
                else:
                    _foreign(base, [sub], out)
        else:
            out.other_size += 0 if layout.is_real_dir(child) else _size(child)
            _foreign(base, [child], out)


def _listed(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        raise fail(
            "cache-unreadable",
            f"cannot list {folder}: {exc.strerror}",
            f"check its permissions (ls -ld {folder})",
            source="environment",
        ) from exc


def _foreign(base: Path, paths: list[Path], out: CacheScan) -> None:
    out.foreign_count += len(paths)
    room = FOREIGN_SHOWN - len(out.foreign)
    out.foreign += [str(p.relative_to(base)) for p in paths[: max(0, room)]]


def _scan_entry(base: Path, entry: Path, out: CacheScan) -> None:
    rel = str(entry.relative_to(base))
    try:
        items = sorted(entry.iterdir())
    except OSError:
        out.leftovers.append(Leftover(rel, "unreadable", 0, _mtime(entry)))
        return
    files = [p for p in items if layout.is_triton_file(p)]
    foreign = layout.foreign_in(entry)
    _foreign(base, foreign, out)
    for d in items:
        m = layout.TMP_DIR.match(d.name)
        if m and d not in foreign and not any(d in f.parents for f in foreign):
            pid = int(m.group(1))
            out.leftovers.append(
                Leftover(str(d.relative_to(base)), "tmp", _size(d), _mtime(d), pid, _alive(pid))
            )
    if not items:
        out.leftovers.append(Leftover(rel, "empty", 0, _mtime(entry)))
        return
    tuned = [f for f in files if f.name.endswith(AUTOTUNE_SUFFIX)]
    for f in tuned:
        out.tuned.append(read_tuned(f, rel))
    meta = [
        f
        for f in files
        if f.suffix == ".json" and not f.name.startswith("__grp__") and f not in tuned
    ]
    for f in meta:
        out.compiled.append(_read_compiled(entry, f, rel, files))
    if files and not tuned and not meta and not foreign:
        out.leftovers.append(Leftover(rel, "partial", _size(entry), _mtime(entry)))


def read_tuned(path: Path, rel: str) -> Tuned:
    kernel = path.name[: -len(AUTOTUNE_SUFFIX)]
    size, mtime = path.stat().st_size, path.stat().st_mtime
    try:
        data = json.loads(path.read_text())  # Triton writes failures as Infinity: json reads it
        timings = [{"config": c, "ms": list(ms)} for c, ms in data["configs_timings"]]
        key = list(data["key"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Tuned(rel, kernel, None, [], None, size, mtime, f"unreadable: {exc}")
    best = min(range(len(timings)), key=lambda i: _p50(timings[i])) if timings else None
    return Tuned(rel, kernel, key, timings, best, size, mtime)


def _p50(timing: dict) -> float:
    ms = timing["ms"]
    return float(ms[0]) if ms else math.inf


def _read_compiled(entry: Path, meta: Path, rel: str, files: list[Path]) -> Compiled:
    name = meta.stem
    size, mtime = sum(_size(f) for f in files), max(_mtime(f) for f in files)
    try:
        data = json.loads(meta.read_text())
        target = data.get("target") or {}
    except (OSError, ValueError) as exc:
        empty = dict.fromkeys(("triton_version", "backend", "arch", "num_warps"), None)
        empty |= dict.fromkeys(("num_stages", "maxnreg", "shared"), None)
        return Compiled(
            rel, name, size=size, mtime=mtime, problems=[f"corrupt-json: {exc}"], **empty
        )
    backend = target.get("backend")
    c = Compiled(
        dir=rel,
        name=data.get("name", name),
        triton_version=data.get("triton_version"),
        backend=backend,
        arch=target.get("arch"),
        num_warps=data.get("num_warps"),
        num_stages=data.get("num_stages"),
        maxnreg=data.get("maxnreg"),
        shared=data.get("shared"),
        size=size,
        mtime=mtime,
    )
    binary = f"{name}.{BINARY_EXT.get(backend or 'cuda', 'cubin')}"
    if not (entry / binary).is_file():
        c.problems.append("no-binary")
    c.problems += _group_problems(entry, entry / f"__grp__{name}.json")
    return c


def _group_problems(entry: Path, group: Path) -> list[str]:
    if not group.is_file():
        return []
    try:
        paths = json.loads(group.read_text())["child_paths"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"corrupt-group: {exc}"]
    here = entry.resolve()
    problems = []
    for child, path in paths.items():
        where = Path(path)
        if where.parent.resolve() != here:
            problems.append(f"group-elsewhere: {path}")
        elif not where.exists():
            problems.append(f"group-missing: {child}")
    return problems


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def _size(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return total


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0
