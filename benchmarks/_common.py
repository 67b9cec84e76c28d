"""What the sweep benchmarks share: the repository, their workload (sweep_matmul16.py), the
--out folder they write to and how they hand their report back. Each runs as a script, so this
folder is on sys.path."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MATMUL16 = ROOT / "benchmarks" / "sweep_matmul16.py"


def out_folder() -> Path:
    """The folder given by --out (default: the current one), made if missing."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    return out


def publish(report: dict, out: Path | None, name: str) -> None:
    """Print the report and, given a folder, keep it there as NAME.json."""
    text = json.dumps(report, indent=2)
    print(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(text)
