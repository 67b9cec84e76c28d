"""What Triton writes in its cache, as names: the proof `cache` asks for before it reads or removes.

A Triton cache root holds one folder per key, named `base32(sha256)` without padding (52
characters, A-Z and 2-7); the workbench's own per-file caches sit under `workbench/<16 hex>/`
in the same layout. An entry holds only files Triton names: IR and binaries `<name>.<stage>`,
`<name>.json`, `__grp__<name>.json`, `<kernel>.autotune.json`, launcher `.so` files and a `lock`,
plus `tmp.pid_<pid>_<hex>/` folders of writes in progress. Anything else is not Triton's: it is
never removed, and a folder holding none of Triton's entries is not scanned at all.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from workbench.runtime.errors import fail

ENTRY = re.compile(r"^[A-Z2-7]{52}$")
WORKBENCH_SUBDIR = "workbench"
WORKBENCH_ENTRY = re.compile(r"^[0-9a-f]{16}$")
TMP_DIR = re.compile(r"^tmp\.pid_(\d+)_[0-9a-f]+$")
STAGES = ("json", "source", "ttir", "ttgir", "llir", "ptx", "cubin", "amdgcn", "hsaco", "so")
FILE = re.compile(rf"^(lock|[\w.\-]+\.({'|'.join(STAGES)}))$")


def is_entry(path: Path) -> bool:
    """A real (not linked) folder named as Triton names a key."""
    return ENTRY.match(path.name) is not None and is_real_dir(path)


def is_triton_file(path: Path) -> bool:
    return FILE.match(path.name) is not None and _is_real_file(path)


def foreign_in(folder: Path, allow_tmp: bool = True) -> list[Path]:
    """What in an entry (or a `tmp.pid_*` folder of one) Triton would not have written: other
    names, links, nested folders; [] proves the folder is Triton's through and through."""
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return [folder]
    out = []
    for child in children:
        if allow_tmp and TMP_DIR.match(child.name) and is_real_dir(child):
            out += foreign_in(child, allow_tmp=False)
        elif not is_triton_file(child):
            out.append(child)
    return out


def check_root(root: Path) -> None:
    """Refuse a folder that cannot be a Triton cache before anything in it is read or removed:
    the file system root, a home folder (or one above it), or a folder with no Triton entry."""
    real = root.resolve()
    home = Path.home().resolve()
    why = None
    if real == Path(real.anchor):
        why = "it is the root of the file system"
    elif real == home or real in home.parents:
        why = "it is a home folder, or holds one"
    elif not _holds_entries(real) and any(real.iterdir()):
        why = "it holds no Triton cache entry (folders named by a 52-character base32 key)"
    if why:
        raise fail(
            "not-a-cache",
            f"{root} is not a Triton cache: {why}",
            "name the cache itself with --dir (or TRITON_CACHE_DIR), e.g. ~/.triton/cache; "
            "nothing was read or removed",
            source="environment",
        )


def not_triton(base: Path, target: Path) -> str | None:
    """Why `target` under the cache `base` is not provably Triton's (None: `cache clear` may
    remove it): an entry, a `tmp.pid_*` folder in one, or one of Triton's files in either."""
    if is_entry(target):
        entry, inner = target, foreign_in(target)
    elif TMP_DIR.match(target.name) and is_real_dir(target):
        entry, inner = target.parent, foreign_in(target, allow_tmp=False)
    elif is_triton_file(target):
        entry, inner = target.parent, []
        if TMP_DIR.match(entry.name):
            entry = entry.parent
    else:
        return "not a name Triton writes"
    if not (is_entry(entry) and _is_entry_parent(base, entry.parent)):
        return "not inside a Triton cache entry"
    if inner:
        return f"holds what Triton does not write ({inner[0].relative_to(base)})"
    return None


def _is_entry_parent(base: Path, folder: Path) -> bool:
    return folder == base or (
        folder.parent == base / WORKBENCH_SUBDIR
        and WORKBENCH_ENTRY.match(folder.name) is not None
        and is_real_dir(folder.parent)
    )


def _holds_entries(root: Path) -> bool:
    if any(is_entry(p) for p in root.iterdir()):
        return True
    sub = root / WORKBENCH_SUBDIR
    return is_real_dir(sub) and any(
        WORKBENCH_ENTRY.match(p.name) and is_real_dir(p) and any(is_entry(e) for e in p.iterdir())
        for p in sub.iterdir()
    )


def is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_real_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
