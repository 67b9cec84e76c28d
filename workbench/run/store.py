"""Results history: one SQLite database under reports/ plus an artifact folder per run.

SQLite in WAL mode with a generous busy timeout lets several workbench processes write at once;
each run is one INSERT in its own transaction, so a run is either recorded whole or not at all.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.runtime.errors import fail

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

    def history(self, kernel: str | None = None, kind: str | None = None, limit: int = 50):
        if not self.path.exists():
            return []
        conn = self._connect()
        try:
            where, args = [], []
            if kernel:
                where.append("kernel = ?")
                args.append(kernel)
            if kind:
                where.append("kind = ?")
                args.append(kind)
            sql = f"SELECT {', '.join(COLUMNS)} FROM runs"
            sql += f" WHERE {' AND '.join(where)}" if where else ""
            sql += " ORDER BY started DESC LIMIT ?"
            rows = conn.execute(sql, [*args, limit]).fetchall()
        finally:
            conn.close()
        return [
            RunRecord(
                **{
                    c: json.loads(v) if c in JSON_COLUMNS and v is not None else v
                    for c, v in zip(COLUMNS, row)
                }
            )
            for row in rows
        ]
