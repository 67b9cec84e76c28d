"""Hostile paths and names, on the real file system and through the real CLI: a link inside a
folder the workbench writes (a report's --out, ir --out, a bench report, the folder of an
imported nsys report) never leads a write or a deletion outside it, and a kernel whose names and
texts hold escape sequences and Textual markup is printed and shown with them escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, cli
from test_history import H100, T0, bench_result, put
from test_tui import check_result, opened, record, select, show

from workbench.bench import report as benchreport
from workbench.runtime.errors import WorkbenchError
from workbench.tui.widgets.kernel_list import KernelList
from workbench.views.rows import CHECK_HEADERS

ESC = "\x1b"
HOUR = 3600.0


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (links not followed) and its bytes: what must not change."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every --out, holding files named like the ones a report writes."""
    folder = tmp_path / "outside"
    folder.mkdir()
    for name in ("roofline.png", "trend.png", "sweep.png", "holiday.png", "notes.md"):
        (folder / name).write_bytes(f"the user's own {name}".encode())
    return folder


@pytest.fixture
def benched() -> None:
    """Two bench runs of vector_add in the store: its page gets a roofline and a trend plot."""
    for i, scale in enumerate((1.0, 1.01)):
        put("bench", "vector_add", bench_result(H100, "vector_add", scale), T0 + i * HOUR)


def _report(out: Path, *more: str) -> object:
    return cli("report", "--all", "--out", str(out), *more)


@pytest.mark.parametrize(
    "link, target",
    [
        ("kernels/vector_add", ""),  # the page's image folder
        ("kernels/vector_add.md", "notes.md"),  # the page itself
        ("kernels", ""),  # the folder of every page
        ("kernels/vector_add/trend.png", "trend.png"),  # one image, in a real folder
        ("index.md", "notes.md"),
    ],
)
def test_report_refuses_a_link_in_out_and_touches_nothing(tmp_path, outside, benched, link, target):
    out = tmp_path / "out"
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    (out / link).symlink_to(outside / target if target else outside)
    before = _tree(outside)
    done = _report(out)
    assert done.returncode == 2, done.stderr
    assert "error (environment)" in done.stderr and "Traceback" not in done.stderr
    assert f"{out / link}: a link (to {outside / target if target else outside})" in done.stderr
    assert "remove the link" in done.stderr and "choose another --out" in done.stderr
    assert _tree(outside) == before  # nothing written, replaced or deleted there
    assert _tree(out) == {}  # refused before anything was written
    (out / link).unlink()
    assert _report(out).returncode == 0  # the remedy works: a real file or folder is made
    assert (out / "kernels" / "vector_add" / "roofline.png").stat().st_size > 5000
    assert not (out / link).is_symlink() and _tree(outside) == before


def test_report_prunes_only_its_own_images(tmp_path, benched):
    """An earlier report's sweep.png goes (no sweep is stored now); the user's file stays. --out
    itself is a link, which is followed: the user chose where it leads."""
    real = tmp_path / "real"
    images = real / "kernels" / "vector_add"
    images.mkdir(parents=True)
    (images / "sweep.png").write_bytes(b"an earlier report's plot")
    (images / "holiday.png").write_bytes(b"the user's own")
    (tmp_path / "latest").symlink_to(real)
    assert _report(tmp_path / "latest", "--format", "html").returncode == 0
    assert sorted(p.name for p in images.iterdir()) == ["holiday.png", "roofline.png", "trend.png"]
    assert (images / "holiday.png").read_bytes() == b"the user's own"
    assert (real / "index.html").is_file() and (real / "kernels" / "vector_add.html").is_file()


def test_ir_out_writes_nothing_through_a_linked_folder(tmp_path, outside):
    out = tmp_path / "ir"
    out.mkdir()
    (out / "0__add_kernel").symlink_to(outside)
    before = _tree(outside)
    done = cli("ir", "vector_add", "--stage", "ttir", "--out", str(out))
    assert "Traceback" not in done.stderr
    assert f"{out / '0__add_kernel'}: a link (to {outside})" in done.stdout + done.stderr
    assert _tree(outside) == before


def test_bench_report_refuses_a_linked_bench_json(tmp_path, outside):
    out = tmp_path / "h100"
    out.mkdir()
    (out / "bench.json").symlink_to(outside / "notes.md")
    before = _tree(outside)
    with pytest.raises(WorkbenchError) as info:
        benchreport.write(json.loads((FIXTURES / "bench_h100_vector_add.json").read_text()), out)
    problem = info.value.problem
    assert problem.kind == "link-in-out" and problem.source == "environment"
    assert problem.file == str(out / "bench.json") and not (out / "README.md").exists()
    assert _tree(outside) == before


def test_nsys_import_exports_nothing_through_a_dangling_link(tmp_path, outside):
    """An .nsys-rep is exported to the .sqlite beside it: a link standing there is refused
    before nsys is looked for."""
    (tmp_path / "run.nsys-rep").write_bytes(b"not read")
    (tmp_path / "run.sqlite").symlink_to(outside / "new.sqlite")
    done = cli("profile", "--import", str(tmp_path / "run.nsys-rep"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'run.sqlite'}: a link (to {outside / 'new.sqlite'})" in done.stderr
    assert not (outside / "new.sqlite").exists()


# ---- names with escape sequences and markup ------------------------------------------------

NAME = "evil\x1b[31m[red]x[/]\x07"
SHOWN = r"evil\x1b[31m[red]x[/]\x07"
EVIL_MODULE = '''"""A copy whose names and texts would drive a terminal or style a UI."""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def copy(x):
    """Copies\\x1b]0;pwned\\x07 [bold]x[/]\\x9b."""
    x = x.contiguous()
    out = torch.empty_like(x)
    _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


SPEC = KernelSpec(
    name="evil\\x1b[31m[red]x[/]\\x07",
    kernel_fn=copy,
    reference_fn=torch.clone,
    make_inputs=lambda s, d, dev: (torch.randn(s, dtype=d, device=dev),),
    shapes={"regular": [(1000,)], "bench": [(4096,)]},
    dtypes=("float32",),
)
'''
RAW = ("\x1b", "\x07", "\x9b")


@pytest.fixture
def evil(tmp_path: Path) -> Path:
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "evil.py").write_text(EVIL_MODULE)
    return folder


def test_list_check_and_history_print_names_escaped(evil):
    listed = cli("list", "--path", str(evil))
    assert listed.returncode == 0, listed.stderr
    assert SHOWN in listed.stdout and not any(c in listed.stdout for c in RAW)
    data = json.loads(cli("list", "--path", str(evil), "--json").stdout)
    assert [k["name"] for k in data["kernels"]] == [NAME]  # JSON keeps the name as it is

    checked = cli("check", NAME, "--path", str(evil))
    assert checked.returncode == 0, checked.stderr
    assert f"{SHOWN} on its given inputs: CORRECT" in checked.stdout
    assert not any(c in checked.stdout + checked.stderr for c in RAW)
    for args in (("history",), ("history", NAME)):
        shown = cli(*args)
        assert shown.returncode == 0 and SHOWN in shown.stdout, shown.stderr
        assert not any(c in shown.stdout + shown.stderr for c in RAW)


async def test_the_tui_shows_names_messages_and_markup_escaped(evil):
    failed = check_result(NAME, ["passed", "error"])
    failed["cases"][1]["reason"] = "ValueError: bad [/] value\x1b[2J [bold]here"
    record("check", NAME, failed, file=str(evil / "evil.py"))
    async with opened([str(evil)]) as (app, pilot):
        kernels = app.screen.query_one(KernelList)
        assert kernels.get_row_at(0)[0] == SHOWN
        drawn = "".join(segment.text for segment in kernels.render_line(1))
        assert SHOWN in drawn and not any(c in drawn for c in RAW)

        await select(app, pilot, NAME)
        kernel_head = app.screen.query_one("#kernel-head").content.plain
        # Rich's Text drops BEL itself: what is left of the name and description, escaped
        assert r"evil\x1b[31m[red]x[/]" in kernel_head
        assert r"Copies\x1b]0;pwned [bold]x[/]\x9b" in kernel_head
        assert not any(c in kernel_head for c in RAW)

        await show(app, pilot, "check")
        pane = app.screen.pane("check")
        assert r"check of evil\x1b[31m[red]x[/]" in pane.query_one(".head").content.plain
        table = pane.query_one("#cases")
        reason = str(table.get_row_at(1)[CHECK_HEADERS.index("note")])
        assert reason == r"ValueError: bad \[/] value\x1b[2J \[bold]here"  # markup escaped
        drawn = "".join(
            segment.text for y in range(table.size.height) for segment in table.render_line(y)
        )
        assert "ValueError: bad [/] value\\x1b" in drawn  # as written, not read as markup
