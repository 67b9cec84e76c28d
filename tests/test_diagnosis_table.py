"""The pitfall table is the one place for ids, thresholds and fixes, and every row is found by a
registered detector."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

import workbench.diagnosis as diagnosis
from workbench.diagnosis import pitfalls
from workbench.diagnosis.registry import DETECTORS, detector, detectors

SOURCES = Path(diagnosis.__file__).parent


def test_every_row_has_a_detector_and_every_detector_a_row():
    assert set(DETECTORS) == set(pitfalls.BY_ID)
    assert len(pitfalls.BY_ID) == len(pitfalls.PITFALLS)  # ids are unique
    # each detector runs once per diagnosis, however many rows it finds
    assert len(detectors()) == len({id(fn) for fns in DETECTORS.values() for fn in fns})
    with pytest.raises(KeyError, match="not a row"):
        detector("no-such-pitfall")(lambda facts: [])


def test_the_rows_the_brief_asks_for_are_there():
    seed_000 = (
        "no-boundary-mask assumes-contiguous accumulating-low-precision forgot-constexpr "
        "register-spill smem-bank-conflicts autotune-stale reduction-across-blocks"
    )
    seed_002 = (
        "store-type-mismatch tf32-mismatch c-integer-division nan-inf host-sync "
        "out-of-resources grid-not-tuple arange-constexpr"
    )
    seed_003 = "rows-wider-than-block grid-too-small"
    profile = (
        "low-occupancy occupancy-gap stall-dominant uncoalesced-access memory-far-from-peak "
        "launch-bound"
    )
    wanted = " ".join((seed_000, seed_002, seed_003, profile)).split()
    assert not set(wanted) - set(pitfalls.BY_ID)


@pytest.mark.parametrize("row", pitfalls.PITFALLS, ids=lambda p: p.id)
def test_a_row_is_complete(row: pitfalls.Pitfall):
    assert row.kind in pitfalls.KINDS
    assert row.symptom and row.reference and row.facts and row.fix
    assert row.fix_id in (None, "config", "cuda-graph")
    for t in row.thresholds:
        assert t.why and len(t.why) > 20, (row.id, t.name)
    for template in (row.fix, *row.variants.values()):
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        assert fields <= {"try", "op", "parameter", "remedy", "reason", "line", "message"}
        assert "{" not in pitfalls.fix_text(row.id)  # every field fills, empty when missing
    assert set(row.facts) <= set(diagnosis.Facts.__dataclass_fields__)


def test_fix_text_fills_the_evidence_and_picks_variants():
    assert pitfalls.fix_text("forgot-constexpr", {"parameter": "BLOCK"}) == (
        "annotate it: BLOCK: tl.constexpr"
    )
    assert "maxnreg" in pitfalls.fix_text("low-occupancy", variant="registers")
    assert pitfalls.fix_text("low-occupancy", variant="nothing known") == pitfalls.fix_text(
        "low-occupancy"
    )
    assert pitfalls.pitfall("autotune-non-key-args").id == "autotune-stale"  # the cache's id
    with pytest.raises(KeyError, match="add a record"):
        pitfalls.pitfall("nope")
    assert pitfalls.limit("smem-bank-conflicts", "ratio") == 0.10


def test_no_fix_text_is_written_outside_the_table():
    """Fixes come from `fix_text` (the table); a string literal passed as fix= elsewhere in
    diagnosis/ would be a second place to keep them."""
    inline = []
    for path in SOURCES.glob("*.py"):
        if path.name == "pitfalls.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "fix":
                if isinstance(node.value, (ast.Constant, ast.JoinedStr)):
                    inline.append(f"{path.name}:{node.lineno}")
    assert not inline
