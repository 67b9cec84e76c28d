"""Results history: one SQLite database under reports/ plus an artifact folder per run.

SQLite in WAL mode with a generous busy timeout lets several workbench processes write at once;
each run is one INSERT in its own transaction, so a run is either recorded whole or not at all.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.runtime.errors import Problem, WorkbenchError, fail

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


def unwritable(path: Path, exc: OSError):  # type: ignore[no-untyped-def]
    return fail(
        "store-unwritable",
        f"cannot write to {path}: {exc.strerror or exc}",
        "make reports/ writable (chmod/chown) or point WORKBENCH_REPORTS at a writable folder",
        file=str(path),
        source="environment",
    )


def run_folder(run_id: str) -> Path:
    """Create the run's artifact folder (raises store-unwritable when it can't)."""
    folder = reports_dir() / "runs" / run_id
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable(folder, exc) from exc
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
    except WorkbenchError as exc:
        return exc.problem
    return None


class Store:
    def __init__(self, root: Path | None = None):
        self.root = root or reports_dir()
        self.path = self.root / "workbench.db"

    def _connect(self) -> sqlite3.Connection:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(SCHEMA)
        except sqlite3.OperationalError as exc:
            raise unwritable(self.path, OSError(str(exc))) from exc
        except OSError as exc:
            raise unwritable(self.root, exc) from exc
        return conn

    def record(self, rec: RunRecord) -> None:
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
        except sqlite3.OperationalError as exc:
            raise unwritable(self.path, OSError(str(exc))) from exc
        finally:
            conn.close()

    def _read(self) -> sqlite3.Connection:
        """A read-only connection: reading needs no write access to reports/ (a WAL database in
        a folder that can't be written opens as immutable, since nothing can change it there)."""
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60)
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
        except sqlite3.DatabaseError as exc:
            raise fail(
                "store-unreadable",
                f"cannot read {self.path}: {exc}",
                "check that it is a workbench database you can read, or point WORKBENCH_REPORTS "
                "at another folder",
                file=str(self.path),
                source="environment",
            ) from exc


def _decode(row: Sequence) -> RunRecord:
    """One stored row; a damaged JSON column reads as None, with the damage as the record's
    problem, so one bad row costs only itself."""
    values = dict(zip(COLUMNS, row))
    damaged = []
    for c in JSON_COLUMNS:
        try:
            values[c] = json.loads(values[c]) if values[c] is not None else None
        except (TypeError, ValueError) as exc:
            values[c] = None
            damaged.append(f"{c} ({exc})")
    if damaged:
        values["problem"] = Problem(
            "corrupt-record",
            f"run {values.get('id')}: its stored {', '.join(damaged)} is not JSON",
            "run it again; `history` and the reports read the other runs",
            source="environment",
        ).to_dict()
    return RunRecord(**values)
