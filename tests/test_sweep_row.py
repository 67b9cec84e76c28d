"""The sweep row's one declaration (`sweep.row.SweepRow`) against the rows real sweeps recorded:
every key a GPU sweep wrote is declared (a key the job starts writing must be), every row has
the keys declared as always present, and a stored sweep reads back and writes the same keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from workbench.sweep.job import _row
from workbench.sweep.result import SweepResult
from workbench.sweep.row import SweepRow

SWEEPS = sorted((FIXTURES / "spaces").glob("*.json")) + sorted(FIXTURES.glob("sweep_*.json"))
DECLARED = SweepRow.__required_keys__ | SweepRow.__optional_keys__
EXPLAINED = {"why", "brief", "model"}
"""The keys `analysis.summarize` writes on reading (a sweep recorded before one lacks it)."""


def _results(path: Path) -> list[dict]:
    """The sweep results in a fixture: itself (a sweep.json), or a run's and its workers'."""
    data = json.loads(path.read_text())
    found = [data] if "rows" in data else []
    if isinstance(data.get("result"), dict):
        found.append(data["result"])
    runs = data.get("runs")
    found += [r["result"] for r in runs or [] if isinstance(r, dict) and "result" in r]
    return [r for r in found if isinstance(r, dict) and "rows" in r]


RECORDED = [p for p in SWEEPS if _results(p)]
"""GPU sweeps as they were recorded: the big spaces (H100) and the sweeps kept as fixtures."""


def test_the_recorded_sweeps_are_the_real_ones():
    names = {p.name for p in RECORDED}
    assert {"matmul.json", "moe.json", "softmax.json", "sweep_h100_matmul16.json"} <= names
    assert all(_results(p) for p in RECORDED if p.parent.name == "spaces")
    assert _results(FIXTURES / "sweep_h100_matmul16.json")


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_every_recorded_row_has_only_declared_keys_and_every_required_one(path):
    for result in _results(path):
        assert result["rows"]
        for row in result["rows"]:
            undeclared = set(row) - DECLARED
            assert not undeclared, f"{path.name}: {row['label']} has {undeclared}: declare them"
            missing = SweepRow.__required_keys__ - set(row)
            assert not missing, f"{path.name}: {row['label']} lacks {missing}"


def test_the_declared_keys_are_what_the_recordings_use():
    """No key is declared that no recorded sweep and no row the job plans holds, but for the
    search strategies' and the multi-worker queue's (recorded sweeps are exhaustive, by one
    worker per run)."""
    seen = {k for p in RECORDED for result in _results(p) for r in result["rows"] for k in r}
    assert DECLARED - seen <= {"chosen_by", "order", "rounds", "worker"}


def test_a_planned_row_has_exactly_the_required_keys():
    row = _row((1024,), {"BLOCK": 64, "num_warps": 4, "num_stages": 3})
    assert set(row) == SweepRow.__required_keys__ | {"check"}


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_a_stored_sweep_reads_back_and_writes_the_same_keys(path):
    for result in _results(path):
        rows = SweepResult.from_dict(result).to_dict()["rows"]
        assert [r["label"] for r in rows] == [r["label"] for r in result["rows"]]
        for before, after in zip(result["rows"], rows):
            assert set(before) <= set(after) and set(after) - set(before) <= EXPLAINED
            assert {k: v for k, v in after.items() if k not in EXPLAINED} == {
                k: v for k, v in before.items() if k not in EXPLAINED
            }
