"""Write a report folder: one page per kernel with its PNGs beside it, and an index linking them.

    OUT/index.md|html
    OUT/kernels/<name>.md|html
    OUT/kernels/<name>/roofline.png, sweep.png, trend.png

File names come from kernel names made safe (letters, digits, . _ -; anything else replaced and a
short hash of the real name added, so two names never share a file, even on a file system that
ignores case); pages refer to their images and to each other by relative paths, so the folder
can be moved, committed or zipped whole. Nothing in OUT is reached through a link
(`runtime.outdir`), and of an image folder only the report's own images are ever replaced or
removed.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench.report import render
from workbench.report.collect import Kernel
from workbench.report.doc import Code, Link, Page, para, table
from workbench.report.sections import IMAGES, PARTS, Images, kernel_page
from workbench.run.store import Store
from workbench.runtime.errors import Problem, fail
from workbench.runtime.outdir import OutDir
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
    names the kernel files of kernels whose runs do not (those not run yet). A link in `out` on
    the way to any file the report writes or prunes is refused before anything is written."""
    store = store or Store()
    generated = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    stems = safe_names(names)
    folder = OutDir(out, "--out")
    index_page = f"index.{fmt}" if index else None
    for stem in stems.values():
        folder.check(f"{KERNELS_DIR}/{stem}.{fmt}")
        folder.check(f"{KERNELS_DIR}/{stem}", folder=True)
        for image in IMAGES:
            folder.check(f"{KERNELS_DIR}/{stem}/{image}")
    if index_page:
        folder.check(index_page)
    written, rows = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="workbench-plots-") as staging:
            for name in names:
                images = Images(folder, f"{KERNELS_DIR}/{stems[name]}", stems[name], Path(staging))
                for image in IMAGES:  # from an earlier report: a part with no plot now shows none
                    folder.remove(f"{images.folder}/{image}")
                kernel = Kernel(name, store, (files or {}).get(name))
                built = kernel_page(kernel, images, generated)
                folder.remove_empty_folder(images.folder)
                page = folder.put(f"{KERNELS_DIR}/{stems[name]}.{fmt}", _rendered(built.page, fmt))
                written.append(Written(name, page, images.written, built.problems, built.missing))
                link = Link(name, f"{KERNELS_DIR}/{page.name}")
                cells = (built.cells.get(p, "-") for p in PARTS)
                rows.append((link, *cells, len(built.problems) or ""))
        index_path = None
        if index_page:
            index_path = folder.put(index_page, _rendered(_index(rows, store, generated), fmt))
    except OSError as exc:
        raise fail(
            "report-unwritable",
            f"cannot write the report at {exc.filename or out}: {exc.strerror or exc}",
            "choose a writable folder with --out",
            file=str(exc.filename or out),
            source="usage",
        ) from exc
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
