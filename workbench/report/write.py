"""Write a report folder: one page per kernel with its PNGs beside it, and an index linking them.

    OUT/index.md|html
    OUT/kernels/<name>.md|html
    OUT/kernels/<name>/roofline.png, sweep.png, trend.png

File names come from kernel names made safe (letters, digits, . _ -; anything else replaced and a
short hash of the real name added, so two names never share a file, even on a file system that
ignores case); pages refer to their images and to each other by relative paths, so the folder
can be moved, committed or zipped whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench.report import render
from workbench.report.collect import Kernel
from workbench.report.doc import Code, Link, Page, para, table
from workbench.report.sections import PARTS, Images, kernel_page
from workbench.run.store import Store
from workbench.runtime.errors import Problem, fail
from workbench.runtime.records import Record

FORMATS = ("md", "html")
KERNELS_DIR = "kernels"
NAME_LIMIT = 64
"""Longest file name stem made from a kernel name (before its hash)."""


@dataclass
class Written(Record):
    kernel: str
    page: Path
    images: list[Path]
    problems: list[Problem] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Commands that would fill the parts not run yet."""


@dataclass
class Report(Record):
    out: Path
    format: str
    index: Path | None
    kernels: list[Written]


def safe_names(names: list[str]) -> dict[str, str]:
    """A file name stem per kernel name: the name itself when it is already safe and unique
    ignoring case, else its safe part and a hash of the whole name."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._-")[:NAME_LIMIT]
        stem = name if base == name else ""
        if not stem or stem.casefold() in taken:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            stem = f"{base or 'kernel'}-{digest}"
        taken.add(stem.casefold())
        out[name] = stem
    return out


def write(
    names: list[str],
    out: Path,
    fmt: str,
    store: Store | None = None,
    index: bool = True,
    files: dict[str, str] | None = None,
) -> Report:
    """Pages of `names` (and the index linking them, when asked) in `fmt` under `out`; `files`
    names the kernel files of kernels whose runs do not (those not run yet)."""
    store = store or Store()
    generated = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    stems = safe_names(names)
    kernels_dir = out / KERNELS_DIR
    written, rows = [], []
    for name in names:
        images = Images(kernels_dir / stems[name], stems[name])
        _clear_images(images.folder)
        built = kernel_page(Kernel(name, store, (files or {}).get(name)), images, generated)
        if images.folder.is_dir() and not any(images.folder.iterdir()):
            images.folder.rmdir()  # made for a plot that had nothing to draw
        page = kernels_dir / f"{stems[name]}.{fmt}"
        _put(page, _rendered(built.page, fmt))
        written.append(Written(name, page, images.written, built.problems, built.missing))
        link = Link(name, f"{KERNELS_DIR}/{page.name}")
        rows.append((link, *(built.cells.get(p, "-") for p in PARTS), len(built.problems) or ""))
    index_path = None
    if index:
        index_path = out / f"index.{fmt}"
        _put(index_path, _rendered(_index(rows, store, generated), fmt))
    return Report(out, fmt, index_path, written)


def _index(rows: list[tuple], store: Store, generated: str) -> Page:
    page = Page("Kernel reports")
    page.blocks.append(para(f"Generated {generated} from the workbench store ({store.path.name})."))
    if rows:
        page.blocks.append(table(("kernel", *PARTS, "problems"), rows))
    else:
        page.blocks.append(
            para("No kernel has runs in this store yet: ", Code("python -m workbench bench --all"))
        )
    return page


def _rendered(page: Page, fmt: str) -> str:
    return render.html(page) if fmt == "html" else render.markdown(page)


def _clear_images(folder: Path) -> None:
    """A kernel's PNGs from an earlier report go: a part with no plot now must not show one."""
    for old in folder.glob("*.png"):
        old.unlink()


def _put(path: Path, text: str) -> None:
    """Write whole or not at all (a reader never sees half a page)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a served or shared report
        os.replace(tmp, path)
    except OSError as exc:
        raise fail(
            "report-unwritable",
            f"cannot write the report to {path.parent}: {exc.strerror or exc}",
            "choose a writable folder with --out",
            file=str(path.parent),
            source="usage",
        ) from exc
