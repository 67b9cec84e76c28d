"""Results history: one SQLite database under reports/ plus an artifact folder per run.

SQLite in WAL mode with a generous busy timeout lets several workbench processes write at once;
each run is one INSERT in its own transaction, so a run is either recorded whole or not at all.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import socket
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.runtime.errors import Problem, WorkbenchError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    kernel TEXT NOT NULL,
    file TEXT,
    params TEXT,
    status TEXT NOT NULL,
    started REAL NOT NULL,
    seconds REAL,
    host TEXT,
    mode TEXT,
    summary TEXT,
    result TEXT,
    problem TEXT,
    artifacts TEXT
);
CREATE INDEX IF NOT EXISTS runs_kernel ON runs (kernel, started);
"""
COLUMNS = (
    "id kind kernel file params status started seconds host mode summary result problem artifacts"
).split()
JSON_COLUMNS = ("params", "summary", "result", "problem")


def reports_dir() -> Path:
    return Path(os.environ.get("WORKBENCH_REPORTS") or Path.cwd() / "reports")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class NotSaved(WorkbenchError):
    """A write the store could not make. What it would have kept is still printed and, where a
    folder could be written, in the run's folder; the CLI then exits 3 ("not saved")."""


_unsaved: list[Problem] = []
"""Every store write this process could not make, oldest first (`unsaved`)."""


def unsaved() -> list[Problem]:
    """The store's write faults so far in this process: whatever command met them, the CLI says
    them once at its end and exits 3."""
    return list(_unsaved)


def write_fault(path: Path, exc: BaseException) -> NotSaved:
    """A failed write to `path` as a clear environment error, kept in `unsaved`."""
    problem = _fault(path, exc, writing=True)
    _unsaved.append(problem)
    return NotSaved(problem)


def read_fault(path: Path, exc: BaseException) -> WorkbenchError:
    return WorkbenchError(_fault(path, exc, writing=False))


def _fault(path: Path, exc: BaseException, writing: bool) -> Problem:
    """What a sqlite or file-system error on the store means, and what to do about it. SQLite's
    messages are the only stable mark of its error codes on every supported Python (their names
    came in 3.11)."""
    why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__
    said = why.lower()
    elsewhere = "or point WORKBENCH_REPORTS at another folder"
    if (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)) or "full" in said:
        kind = "store-full"
        remedy = f"free space on the disk that holds {path.parent}, {elsewhere}"
    elif "locked" in said or "busy" in said:
        kind = "store-locked"
        remedy = (
            "another process holds the database (a workbench command, or a sqlite3 shell in a "
            f"transaction): let it finish and run again, {elsewhere}"
        )
    elif isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        kind = "store-corrupt"
        remedy = (
            f"move it aside (mv {path} {path}.damaged; `sqlite3 {path.name}.damaged .recover` "
            "may save its rows): the next run starts a new database, and the run folders beside "
            f"it keep every earlier run's files; {elsewhere}"
        )
    elif writing:
        kind = "store-unwritable"
        remedy = f"make {path.parent} writable (a read-only disk, its owner or mode), {elsewhere}"
    else:
        kind = "store-unreadable"
        remedy = f"check that {path} is a workbench database you can read, {elsewhere}"
    doing = "write to" if writing else "read"
    return Problem(kind, f"cannot {doing} it: {why}", remedy, file=str(path), source="environment")


def write_text(path: Path, text: str) -> None:
    """A file of a run's folder, written (NotSaved when the disk refuses it)."""
    try:
        path.write_text(text)
    except OSError as exc:
        raise write_fault(path, exc) from exc


def run_folder(run_id: str) -> Path:
    """Create the run's artifact folder (NotSaved when it can't take a file)."""
    folder = reports_dir() / "runs" / run_id

    def make() -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    return _writable(folder, make)


def temporary_folder(run_id: str) -> Path:
    """A folder of the system's temporary space, for a run whose folder the store can't make."""
    prefix, named = f"workbench-{run_id}-", Path(os.environ.get("TMPDIR") or "/tmp")
    return _writable(named, lambda: Path(tempfile.mkdtemp(prefix=prefix)))


def _writable(where: Path, make: Callable[[], Path]) -> Path:
    """The folder `make` makes (under `where`), once it took a byte: a read-only or full disk
    may still make a folder where nothing can be written (NotSaved then, leaving no folder)."""
    try:
        folder = make()
    except OSError as exc:
        raise write_fault(where, exc) from exc
    probe = folder / ".probe"
    try:
        probe.write_bytes(b"0")
        probe.unlink()
    except OSError as exc:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
            folder.rmdir()
        raise write_fault(folder, exc) from exc
    return folder


@dataclass(frozen=True)
class RunRecord:
    id: str
    kind: str
    kernel: str
    file: str | None
    params: dict
    status: str
    started: float
    seconds: float | None
    host: str
    mode: str
    summary: dict | None
    result: dict | None
    problem: dict | None
    artifacts: str | None

    def to_dict(self) -> dict:
        return {c: getattr(self, c) for c in COLUMNS}


def record_run(
    run_id: str,
    kind: str,
    kernel: str,
    *,
    file: str | None,
    params: dict,
    status: str,
    seconds: float,
    mode: str,
    summary: dict | None,
    artifacts: str | None,
    result: dict | None = None,
    problem: dict | None = None,
) -> Problem | None:
    """Record a run that ended just now, after `seconds`, on this host. Returns the problem when
    the store cannot be written: the run's folder keeps its files either way."""
    rec = RunRecord(
        id=run_id,
        kind=kind,
        kernel=kernel,
        file=file,
        params=params,
        status=status,
        started=time.time() - seconds,
        seconds=round(seconds, 3),
        host=socket.gethostname(),
        mode=mode,
        summary=summary,
        result=result,
        problem=problem,
        artifacts=artifacts,
    )
    try:
        Store().record(rec)
    except NotSaved as exc:
        return exc.problem
    return None


def _write_ahead(conn: sqlite3.Connection, timeout: float) -> None:
    """WAL mode, which the database keeps once set. Switching to it takes a lock that SQLite does
    not wait for (the busy timeout does not cover it): processes that open a new database at
    once find it locked, so a locked switch is tried again until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Store:
    timeout = 60.0
    """Seconds a write waits for another process's transaction before it is refused."""

    def __init__(self, root: Path | None = None):
        self.root = root or reports_dir()
        self.path = self.root / "workbench.db"

    def _connect(self) -> sqlite3.Connection:
        conn = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout)
            _write_ahead(conn, self.timeout)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            if conn is not None:
                conn.close()
            raise write_fault(self.path, exc) from exc
        return conn

    def record(self, rec: RunRecord) -> None:
        """Insert one run; NotSaved (its cause and remedy) when the database can't take it."""
        row = [
            json.dumps(getattr(rec, c)) if c in JSON_COLUMNS else getattr(rec, c) for c in COLUMNS
        ]
        conn = self._connect()
        try:
            with conn:
                conn.execute(
                    f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(row))})",
                    row,
                )
        except sqlite3.Error as exc:
            raise write_fault(self.path, exc) from exc
        finally:
            conn.close()

    def _read(self) -> sqlite3.Connection:
        """A read-only connection: reading needs no write access to reports/ (a WAL database in
        a folder that can't be written opens as immutable, since nothing can change it there)."""
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=self.timeout)
            conn.execute("SELECT 1 FROM runs LIMIT 1")
        except sqlite3.OperationalError:
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True)
        return conn

    def history(
        self, kernel: str | None = None, kind: str | Sequence[str] | None = None, limit: int = 50
    ) -> list[RunRecord]:
        """Newest first; `kind` is one stored kind or several."""
        if not self.path.exists():
            return []
        kinds = [kind] if isinstance(kind, str) else list(kind or [])
        where, args = [], []
        if kernel:
            where.append("kernel = ?")
            args.append(kernel)
        if kinds:
            where.append(f"kind IN ({', '.join('?' * len(kinds))})")
            args.extend(kinds)
        sql = f"SELECT {', '.join(COLUMNS)} FROM runs"
        sql += f" WHERE {' AND '.join(where)}" if where else ""
        sql += " ORDER BY started DESC LIMIT ?"
        return [_decode(row) for row in self._query(sql, [*args, limit])]

    def kernels(self) -> list[str]:
        """Names of the kernels that have runs, A to Z."""
        if not self.path.exists():
            return []
        return [r[0] for r in self._query("SELECT DISTINCT kernel FROM runs ORDER BY kernel", [])]

    def _query(self, sql: str, args: list) -> list[tuple]:
        try:
            conn = self._read()
            try:
                return conn.execute(sql, args).fetchall()
            finally:
                conn.close()
        except (sqlite3.Error, OSError) as exc:
            raise read_fault(self.path, exc) from exc


UNREADABLE = "unreadable"
"""The status of a stored row that does not read back as a run (`_decode`)."""
RESULT_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)
"""What reading a stored result as its typed result raises when the stored shape is not that
type's (written by another version, or edited by hand): the reader shows it as unreadable."""
MAX_DEPTH = 64
"""Deepest nesting a stored JSON column may have (results nest about 10 deep): deeper ones would
overflow the recursive code that renders them."""
TEXT_COLUMNS = ("id", "kind", "kernel", "status")
OPTIONAL_TEXT = ("file", "host", "mode", "artifacts")


def unreadable_result(rec: RunRecord, exc: BaseException, again: str) -> Problem:
    """Why `rec`'s stored result does not read as its kind's (one of RESULT_ERRORS); `again`
    is what makes a fresh one."""
    return Problem(
        "corrupt-result",
        f"the stored result of {rec.kind} run {rec.id} cannot be read "
        f"({type(exc).__name__}: {exc})",
        f"{again} for a fresh one; the other runs read as before",
        file=rec.artifacts,
        source="environment",
    )


def _decode(row: Sequence) -> RunRecord:
    """One stored row. A column of the wrong type (text where a time is kept, JSON that is not
    an object, or nests too deep) reads as None or a neutral value, the record's status as
    `UNREADABLE` and the damage as its problem: one bad row costs only itself."""
    values = dict(zip(COLUMNS, row))
    damaged = []
    for c in JSON_COLUMNS:
        try:
            values[c] = _object(values[c])
        except (TypeError, ValueError, RecursionError) as exc:
            values[c] = None
            damaged.append(f"{c} ({exc})")
    for c in TEXT_COLUMNS + OPTIONAL_TEXT:
        if not isinstance(values[c], str) and not (c in OPTIONAL_TEXT and values[c] is None):
            damaged.append(f"{c} ({type(values[c]).__name__}, not text)")
            values[c] = _text(values[c])
    for c in ("started", "seconds"):
        if not isinstance(values[c], (int, float)) and not (c == "seconds" and values[c] is None):
            damaged.append(f"{c} ({_text(values[c])!r}, not a number)")
            values[c] = 0.0 if c == "started" else None
    if damaged:
        values["status"] = UNREADABLE
        values["problem"] = Problem(
            "corrupt-record",
            f"run {values['id']}: its stored {', '.join(damaged)} cannot be read",
            "run it again; `history` and the reports read the other runs",
            source="environment",
        ).to_dict()
    return RunRecord(**values)


def _object(text: object) -> dict | None:
    """A JSON column: an object or null (TypeError, ValueError or RecursionError otherwise)."""
    if text is None:
        return None
    value = json.loads(text)  # type: ignore[arg-type]
    if value is None:
        return None
    if not isinstance(value, dict):
        raise TypeError(f"a JSON {type(value).__name__}, not an object")
    stack: list[tuple[dict | list, int]] = [(value, 1)]
    while stack:  # iteratively: the depth is what is being checked
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RecursionError(f"nested deeper than {MAX_DEPTH}")
        inner = item.values() if isinstance(item, dict) else item
        stack += [(x, depth + 1) for x in inner if isinstance(x, (dict, list))]
    return value


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
