"""The pitfall table is the one place for ids, thresholds and fixes, and every row is found by a
registered detector; a compile's per-config findings weigh an autotuner's candidates as such."""

from __future__ import annotations

import ast
import json
import string
from pathlib import Path

import pytest
from conftest import FIXTURES

import workbench.diagnosis as diagnosis
from workbench.diagnosis import diagnose_compile, pitfalls, static
from workbench.diagnosis.registry import DETECTORS, detector, detectors
from workbench.ir.facts import Compiled, CompileFacts
from workbench.ir.linemap import StageMap
from workbench.ir.resources import resources

SOURCES = Path(diagnosis.__file__).parent


def test_every_row_has_a_detector_and_every_detector_a_row():
    assert set(DETECTORS) == set(pitfalls.BY_ID)
    assert len(pitfalls.BY_ID) == len(pitfalls.PITFALLS)  # ids are unique
    # each detector runs once per diagnosis, however many rows it finds
    assert len(detectors()) == len({id(fn) for fns in DETECTORS.values() for fn in fns})
    with pytest.raises(KeyError, match="not a row"):
        detector("no-such-pitfall")(lambda facts: [])
    # the compile's findings come in under exactly the rows that say they read them
    reading = {p.id for p in pitfalls.PITFALLS if "compile_findings" in p.facts}
    assert reading == {id for id, fns in DETECTORS.items() if static.compile_facts in fns}


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


FIX_FIELDS = {"try", "op", "parameter", "remedy", "reason", "line", "message", "length", "vector"}
"""What a fix template may name: the evidence its detector fills in."""


@pytest.mark.parametrize("row", pitfalls.PITFALLS, ids=lambda p: p.id)
def test_a_row_is_complete(row: pitfalls.Pitfall):
    assert row.kind in pitfalls.KINDS
    assert row.symptom and row.reference and row.facts and row.fix
    assert row.fix_id in (None, "config", "cuda-graph")
    for t in row.thresholds:
        assert t.why and len(t.why) > 20, (row.id, t.name)
    for template in (row.fix, *row.variants.values()):
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        assert fields <= FIX_FIELDS
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


def _facts(kernel: str, tuned: bool, spilling_only: bool = False) -> CompileFacts:
    """The library kernel's autotune configs as the IR job compiled them (Triton 3.9, sm_90)."""
    doc = json.loads((FIXTURES / "diagnosis" / "ir_cpu_autotune_candidates.json").read_text())
    out = []
    for v in doc[kernel]:
        r = v["resources"]
        usage = {"REG": r["regs"], "STACK": r["stack_bytes"], "LOCAL": r["local_bytes"]}
        usage["SHARED"] = r["static_shared"]
        res = resources(
            r["kernel"], r["arch"], usage, r["dynamic_shared"], r["num_warps"], r["num_stages"]
        )
        if spilling_only and not res.spill_bytes:
            continue
        where = (v["file"], v["def_line"])
        ttir = "tt.dot"  # their TTIR holds tl.dot's op: all that the occupancy rule reads of it
        out.append(Compiled(v["label"], where, res, ttir, StageMap("ttir"), {}, tuned=tuned))
    return CompileFacts(out, [], [], [])


@pytest.mark.parametrize("kernel", ["matmul", "attention"])
def test_autotune_candidates_that_spill_are_info_while_another_does_not(kernel: str):
    """Some of the library kernels' autotune configs spill (or cannot launch) on sm_90; the
    autotuner times them all and skips what cannot launch, so they are facts, not problems.
    The same configs launched one by one, or candidates that all spill, keep their severity."""
    found = diagnose_compile(_facts(kernel, tuned=True))
    spills = [f for f in found if f.id == "register-spill"]
    assert spills and all(f.severity == "info" for f in found)
    assert "autotune candidates" in spills[0].evidence["why_info"]
    launched = diagnose_compile(_facts(kernel, tuned=False))
    assert {f.severity for f in launched if f.id == "register-spill"} == {"high"}
    every = diagnose_compile(_facts(kernel, tuned=True, spilling_only=True))
    launchable = [f for f in every if f.id == "register-spill" and f.severity == "high"]
    assert launchable  # every candidate that can launch spills: nothing to pick instead
