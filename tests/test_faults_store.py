"""Store faults, for real: a garbled database, a read-only store (a read-only mount: root
writes through chmod), a full disk (a tiny tmpfs), a locked database, stored records of shapes
no version wrote, and a sweep file that is not a sweep. Each ends in a clear message naming the
path and the remedy, the exit status the README gives (3: the result printed, not saved), no
traceback, and nothing already stored lost."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli, cpu_env
from test_tui import check_result, h100_bench, head, opened, record, select, show, until

from workbench.cli.main import main
from workbench.run import store
from workbench.run.store import RunRecord, Store

VECTOR_ADD = str(ROOT / "kernels" / "vector_add.py")
CHECK = ("check", "vector_add", "--dtype", "float32", "--shapes", "regular")
IR = ("ir", "vector_add", "--stage", "ttir")
SWEEP = ("sweep", "vector_add", "--space", "auto")


@contextlib.contextmanager
def mounted(where: Path, *options: str) -> Iterator[Path]:
    """`mount options...` on `where` for the block, unmounted after it; the test is skipped
    where this machine does not let it mount."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", *options, str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip() or done.returncode})")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder`, as it is, made read-only: a bind mount of itself, remounted read-only."""
    with mounted(folder, "--bind", str(folder)):
        remount = ["mount", "-o", "remount,ro,bind", str(folder)]
        done = subprocess.run(remount, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only here ({done.stderr.strip()})")
        yield folder


def fill(folder: Path) -> None:
    """Write into `folder` until its file system is full."""
    with open(folder / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 4096)


def run(reports: Path, *args: str, tmp: Path | None = None) -> subprocess.CompletedProcess:
    """A CLI command on the CPU, its runs written to `reports`, its fallback folders to `tmp`."""
    env = cpu_env(reports) | ({"TMPDIR": str(tmp)} if tmp else {})
    return cli(*args, env=env)


def clean(out: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in out.stderr + out.stdout, out.stderr[-3000:]


def earlier_run(reports: Path) -> str:
    """A check of vector_add already in the store: what a fault must not lose."""
    run_id = "earlier-check"
    result = check_result("vector_add", ["passed"])
    rec = RunRecord(run_id, "check", "vector_add", VECTOR_ADD, {}, "ok", time.time() - 60, 1.0,
                    "h", "interpreter", None, result, None, None)  # fmt: skip
    Store(reports).record(rec)
    return run_id


def stored_ids(reports: Path) -> set[str]:
    return {r.id for r in Store(reports).history(limit=1000)}


# ---- a garbled database ----------------------------------------------------------------------


def test_a_garbled_database_is_named_with_its_remedy_on_write_and_on_read(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    garbage = bytes(range(256)) * 32
    (reports / "workbench.db").write_bytes(garbage)

    out = run(reports, *CHECK)
    clean(out)
    assert out.returncode == 3, out.stderr  # the verdict printed, not saved
    assert "vector_add on its given inputs: CORRECT" in out.stdout
    assert "not saved (environment)" in out.stderr and "file is not a database" in out.stderr
    assert f"mv {reports / 'workbench.db'}" in out.stderr  # the remedy: move it aside
    [folder] = (reports / "runs").iterdir()  # the run's files are kept where they belong
    assert (folder / "log.txt").is_file()

    report = ("report", "--all", "--out", str(tmp_path / "r"))
    for args in (("history",), ("history", "vector_add", "--trend"), report):
        read = run(reports, *args)
        clean(read)
        assert read.returncode == 2, (args, read.stderr)
        assert "error (environment)" in read.stderr and "file is not a database" in read.stderr
    assert (reports / "workbench.db").read_bytes() == garbage  # never overwritten


def test_a_locked_database_is_said_as_such(_reports, monkeypatch):
    """Another process holding a write transaction past the busy timeout."""
    earlier_run(_reports)
    monkeypatch.setattr(Store, "timeout", 0.2)
    holder = sqlite3.connect(_reports / "workbench.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        problem = store.record_run("later", "check", "vector_add", file=None, params={},
                                   status="ok", seconds=1.0, mode="cpu", summary=None,
                                   artifacts=None)  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert problem is not None and problem.kind == "store-locked"
    assert "database is locked" in problem.cause and "another process" in problem.remedy
    assert problem in store.unsaved() and stored_ids(_reports) == {"earlier-check"}


# ---- a read-only store -----------------------------------------------------------------------


def test_every_command_that_stores_says_not_saved_on_a_read_only_store(tmp_path):
    reports, tmp = tmp_path / "reports", tmp_path / "tmp"
    tmp.mkdir()
    earlier = earlier_run(reports)
    db = (reports / "workbench.db").read_bytes()
    with read_only(reports):
        sweep = run(reports, *SWEEP, tmp=tmp)
        resources = run(reports, "resources", "vector_add", tmp=tmp)
        imported = run(reports, "profile", "--import", str(FIXTURES / "ncu_spill.ncu-rep"))
        history = run(reports, "history", "--json")
    for out in (sweep, resources, imported):
        clean(out)
        assert out.returncode == 3, out.stderr
        assert "not saved (environment)" in out.stderr and "Read-only file system" in out.stderr
        assert "WORKBENCH_REPORTS" in out.stderr
    assert "vector_add float32 on sm_90" in sweep.stdout  # the results, printed
    assert "BLOCK" in resources.stdout and "pitfall_spill" in imported.stdout
    [kept] = [p for p in tmp.iterdir() if (p / "sweep.json").is_file()]  # and said where
    assert str(kept) in sweep.stderr
    assert history.returncode == 0 and [r["id"] for r in json.loads(history.stdout)] == [earlier]
    assert (reports / "workbench.db").read_bytes() == db


# ---- a full disk -----------------------------------------------------------------------------


def test_check_ir_and_sweep_on_a_full_disk_print_their_result_and_exit_3(tmp_path):
    disk, tmp = tmp_path / "disk", tmp_path / "tmp"
    tmp.mkdir()
    with mounted(disk, "-t", "tmpfs", "-o", "size=256k", "tmpfs"):
        reports = disk / "reports"
        earlier = earlier_run(reports)
        fill(disk)
        outs = {args[0]: run(reports, *args, tmp=tmp) for args in (CHECK, IR, SWEEP)}
        (disk / "filler").unlink()  # room for the read's shared memory file
        kept = stored_ids(reports)
    for out in outs.values():
        clean(out)
        assert out.returncode == 3, out.stderr
        assert "not saved (environment)" in out.stderr
        assert "No space left on device" in out.stderr and "free space" in out.stderr
    assert "vector_add on its given inputs: CORRECT" in outs["check"].stdout
    assert "vector_add [BLOCK=" in outs["ir"].stdout and "tt.load" in outs["ir"].stdout
    assert "vector_add float32 on sm_90" in outs["sweep"].stdout
    assert [p for p in tmp.iterdir() if (p / "sweep.json").is_file()]  # its files, elsewhere
    assert kept == {earlier}


def test_with_no_folder_left_to_write_a_run_is_refused_as_not_saved(tmp_path, monkeypatch, capsys):
    """Neither reports/ nor the temporary space takes a file: a clear error, status 3."""
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", "size=64k", "tmpfs") as disk:
        fill(disk)
        monkeypatch.setenv("WORKBENCH_REPORTS", str(disk / "reports"))
        monkeypatch.setattr(tempfile, "tempdir", str(disk))
        assert main([*CHECK, "--path", VECTOR_ADD]) == 3
        err = capsys.readouterr().err
        assert err.startswith("error (environment): ") and "No space left on device" in err
        left = [p.name for p in disk.iterdir()] + [p.name for p in disk.glob("reports/runs/*")]
        assert sorted(left) == ["filler", "reports"]  # no empty run folder left behind


# ---- records of an unexpected shape ----------------------------------------------------------


def insert_bad_rows(reports: Path) -> dict[str, str]:
    """Beside good runs of vector_add, newer rows that no version wrote, put with sqlite3
    itself: run id -> what is wrong with it."""
    record("check", "vector_add", check_result("vector_add", ["passed"]), started=1e9)
    record("bench", "vector_add", h100_bench(), started=1e9)
    bad = {
        "format-0": ("check", "result", '{"format": 0}'),
        "a-list": ("bench", "result", "[1, 2]"),
        "text-started": ("ir", "started", "yesterday"),
        "deep": ("diagnose", "result", "[" * 100_000 + "]" * 100_000),
        "deep-summary": ("diagnose", "summary", '{"a": ' * 500 + "1" + "}" * 500),
    }
    with sqlite3.connect(reports / "workbench.db") as db:
        for run_id, (kind, column, value) in bad.items():
            row = {"id": run_id, "kind": kind, "kernel": "vector_add", "params": "{}",
                   "status": "ok", "started": 2e9, "result": "null", column: value}  # fmt: skip
            names = ", ".join(row)
            db.execute(f"INSERT INTO runs ({names}) VALUES ({', '.join('?' * len(row))})",
                       list(row.values()))  # fmt: skip
    return {run_id: kind for run_id, (kind, _, _) in bad.items()}


def test_history_and_the_report_show_records_of_unknown_shape_as_unreadable(_reports, tmp_path):
    bad = insert_bad_rows(_reports)
    listed = cli("history", "vector_add")
    clean(listed)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[2:] if line.strip()}
    assert all("unreadable" in rows[run_id] for run_id in bad), listed.stdout
    assert "correct" in rows["check-vector_add"]  # the good runs read as before
    assert "bench times per case" in listed.stdout  # and the trend from the good bench

    as_json = cli("history", "--json")
    assert as_json.returncode == 0 and {r["id"] for r in json.loads(as_json.stdout)} >= set(bad)

    report = cli("report", "--all", "--out", str(tmp_path / "r"))
    clean(report)
    assert report.returncode == 0, report.stderr
    assert "unreadable (vector_add)" in report.stderr and "format-0" in report.stderr
    page = (tmp_path / "r" / "kernels" / "vector_add.md").read_text()
    assert "CORRECT" in page and "cannot be" in page  # the good check, and what was left out


async def test_the_tui_shows_records_of_unknown_shape_as_unreadable(_reports):
    insert_bad_rows(_reports)
    bench = h100_bench()  # a time that is text: it reads back typed, but cannot be shown
    odd = {**bench, "records": [{**bench["records"][0], "ms": "fast"}]}
    record("bench", "vector_add", odd, run_id="odd-bench", started=3e9)
    folder = _reports / "runs" / "broken-profile"  # an ncu summary in name only
    folder.mkdir(parents=True)
    (folder / "profile.json").write_text('{"tool": "ncu", "kernels": [1]}')
    record("profile-import", "vector_add", artifacts=str(folder))
    async with opened([VECTOR_ADD]) as (app, pilot):
        await until(pilot, lambda: app.screen.status)
        kernels = app.screen.query_one("KernelList")
        assert kernels.get_row_at(0)[1] == "unreadable"  # the newest check is format-0

        await select(app, pilot, "vector_add")
        await show(app, pilot, "check")
        text = head(app, "check")
        assert "check run format-0 cannot be read" in text and "KeyError" in text
        assert "CORRECT" in text  # the older result it still shows
        await show(app, pilot, "ir")
        assert "[unreadable]" in head(app, "ir") and "'yesterday', not a number" in head(app, "ir")
        await show(app, pilot, "diagnosis")
        assert "[unreadable]" in head(app, "diagnosis")
        await show(app, pilot, "bench")
        assert "run odd-bench cannot be shown" in head(app, "bench")
        await show(app, pilot, "profile")
        assert "ncu profile of vector_add cannot be read (AttributeError" in head(app, "profile")
        assert app.is_running and app.return_code is None


# ---- a sweep file that is not a sweep --------------------------------------------------------


def test_resume_passes_over_a_sweep_file_that_is_not_one(_reports):
    folder = _reports / "runs" / "20250101-000000-aaaaaa"
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text("[1, 2]")
    out = cli(*SWEEP, "--resume")
    clean(out)
    assert out.returncode == 2
    assert "error (usage): no earlier sweep of vector_add to resume" in out.stderr
    assert str(folder / "sweep.json") in out.stderr and "without --resume" in out.stderr
    assert (folder / "sweep.json").read_text() == "[1, 2]"
