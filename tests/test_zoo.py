"""The zoo (zoo/): third-party kernels in the three-name contract, and copies with one planted bug.

Each zoo kernel's answer is written down in zoo/expected.json before any run; these tests hold
the workbench to it where a CPU can: discovery lists every kernel, each planted copy differs from
its original by one named change, Triton's interpreter checks the kernels small enough for it
(every case's status and the verdict), and every kernel cross-compiles for sm_90 with the static
findings expected of it. The interpreter checks run in two child processes, the cross-compiles
in two more (CI has 2 cores); `tests/gpu/test_zoo_gpu.py` holds the rest on the GPU host.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, interpreter_checks

from workbench.cache import static
from workbench.catalog.discovery import discover
from workbench.diagnosis.finding import SEVERITIES

ZOO = ROOT / "zoo"
EXPECTED: dict[str, dict] = json.loads((ZOO / "expected.json").read_text())["kernels"]
RIDGE = 990e12 / 3.35e12
"""FLOP/B where an H100's bf16 dense tensor-core rate meets its HBM3 bandwidth."""
INTERPRETED = sorted(n for n, e in EXPECTED.items() if e["interpreter"])
PLANTED = sorted(n for n, e in EXPECTED.items() if e["planted"])
CASES = ("check/contiguous", "check/strided", "derived/contiguous", "derived/strided")
ZOO_PACKAGES = ("liger_kernel", "flag_gems", "fla", "einops")
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ZOO_PACKAGES),
    reason="the zoo needs liger-kernel, flag-gems and fla-core: pip install --no-deps "
    "liger-kernel==0.8.5 flag-gems==5.0.2 fla-core==0.6.0 einops==0.8.2",
)


def test_discovery_lists_every_zoo_kernel_by_its_file_name():
    catalog = discover([str(ZOO)])
    assert not catalog.problems, catalog.problems
    found = {k.name: k for k in catalog.kernels}
    assert set(found) == set(EXPECTED)
    for name, entry in found.items():
        assert entry.contract == "three-name" and Path(entry.file) == ZOO / f"{name}.py"
        assert entry.description, name


def test_expected_answers_cover_every_kernel_and_place_it_by_its_intensity():
    for name, e in EXPECTED.items():
        assert set(e["cases"]) == set(CASES), name
        assert e["correct_given"] == e["cases"]["check/contiguous"], name
        assert (e["verdict_given"] == "correct") == e["correct_given"], name
        roof = e["roofline"]
        assert roof["intensity"] == pytest.approx(roof["flops"] / roof["bytes"], rel=1e-3), name
        # measured traffic (ncu's DRAM bytes) places a kernel where it exceeds the minimum
        moved = roof["flops"] / roof.get("measured_bytes", roof["bytes"])
        assert roof["bound"] == ("compute" if moved > RIDGE else "memory"), name
        # a planted bug ranks first; an original has no finding unless a measured one revised it
        assert (e["first_finding"] is None) == (e["planted"] is None) or e.get("revised"), name
        assert e["interpreter"] or e["interpreter_note"], name
        assert not e["autotuned"] or e["sweep"], name


def _function_block(text: str, name: str) -> list[str]:
    """The lines of top-level function `name` in `text`, its decorators included."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            return text.splitlines()[start : node.end_lineno]
    raise AssertionError(f"no function {name}")


def _original_and_copy(name: str) -> tuple[list[str], list[str]]:
    """The original's lines and the planted copy's matching lines: a whole zoo file but its
    docstring, or one function copied from an installed package's file."""
    original = EXPECTED[name]["original"]
    copy = (ZOO / f"{name}.py").read_text()
    if original.startswith("zoo/"):

        def body(text: str) -> list[str]:
            return text.splitlines()[ast.parse(text).body[0].end_lineno :]  # after the docstring

        return body((ROOT / original).read_text()), body(copy)
    module, function = original.split(":")
    package = importlib.util.find_spec(module.split(".")[0]).submodule_search_locations[0]
    path = Path(package).joinpath(*module.split(".")[1:]).with_suffix(".py")
    return _function_block(path.read_text(), function), _function_block(copy, function)


@pytest.mark.parametrize("name", PLANTED)
def test_each_planted_copy_differs_from_its_original_by_one_named_change(name):
    original, copy = _original_and_copy(name)
    diff = list(difflib.unified_diff(original, copy, lineterm="", n=0))
    removed = [x[1:] for x in diff if x.startswith("-") and not x.startswith("---")]
    added = [x[1:] for x in diff if x.startswith("+") and not x.startswith("+++")]
    assert added and len(added) == len(removed), diff
    labels = {line.split("# PLANTED:")[1].strip() for line in added if "# PLANTED:" in line}
    assert len(labels) == 1 and all("# PLANTED:" in line for line in added), diff


@pytest.fixture(scope="module")
def interpreted() -> dict[str, dict]:
    todo = [(ZOO, name, {}) for name in INTERPRETED]
    return interpreter_checks(todo[0::2], todo[1::2])


@pytest.mark.parametrize("name", INTERPRETED)
def test_the_interpreter_gives_each_case_its_expected_answer(interpreted, name):
    expected = EXPECTED[name]
    result = interpreted[name]
    got = {f"{c['shape_set']}/{c['layout']}": c["status"] == "passed" for c in result["cases"]}
    assert got == expected["cases"], [c["reason"] for c in result["cases"]]
    wrong = not all(expected["cases"].values())
    verdict = expected["verdict_derived"] if wrong else "correct"
    assert result["summary"]["verdict"] == verdict


# What the worker does for a resources job on a host without a GPU (the module imported under
# TRITON_INTERPRET=1, then again compilable), for several kernels in one process.
_RESOURCES = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from workbench.cache import static
from workbench.catalog.discovery import discover
from workbench.catalog.loader import load_spec
from workbench.diagnosis.ir_job import job
from workbench.run.params import IrParams
from workbench.run.worker import Context
path, out = sys.argv[1], sys.argv[2]
for name in json.loads(sys.argv[3]):
    entry = discover([path]).find(name)
    ctx = Context("cpu", True, out, lambda event: None, entry.file)
    result = job(load_spec(entry), IrParams(stages=["ttir"], out=out), ctx)
    print("RESULT " + json.dumps(result), flush=True)
"""


COMPILE_TIMEOUT = 540
"""Seven kernels' compiles in one child: about 30 s on 2 idle cores, many times that on a
machine shared with other test runs."""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, dict]:
    """The resources job's result for every zoo kernel, cross-compiled for sm_90."""
    names = sorted(EXPECTED)

    def run(part: list[str]) -> list[dict]:
        out = tmp_path_factory.mktemp("ir")
        proc = subprocess.run(
            [sys.executable, "-c", _RESOURCES, str(ZOO), str(out), json.dumps(part)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads(x[7:]) for x in proc.stdout.splitlines() if x.startswith("RESULT ")]

    with ThreadPoolExecutor(max_workers=2) as pool:
        return {
            r["kernel"]: r for found in pool.map(run, (names[0::2], names[1::2])) for r in found
        }


@pytest.mark.timeout(COMPILE_TIMEOUT + 60)  # the first one waits for every compile
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_zoo_kernel_cross_compiles_for_sm90_with_its_static_findings(compiled, name):
    result = compiled[name]
    assert result["mode"] == "cross-compile" and result["arch"] == "sm_90"
    assert result["variants"], "no launch compiled"
    for variant in result["variants"]:
        assert variant["error"] is None, variant["error"]
        assert variant["resources"]["regs"] > 0, variant["label"]
    order = {s: i for i, s in enumerate(SEVERITIES)}
    ranked = sorted(result["findings"], key=lambda f: order.get(f["severity"], len(order)))
    above_info = [
        f"{f['id']} ({f['severity']}): {f['title']}" for f in ranked if f["severity"] != "info"
    ]
    first = above_info[0].split(" ")[0] if above_info else None
    assert first == EXPECTED[name]["static_first"], above_info
    if name == "planted_moe_spill":
        assert result["variants"][0]["resources"]["spill_bytes"] > 0


def test_only_the_planted_key_is_found_missing_a_loop_bound():
    """The static key rule on every zoo file, the cache doctor's and diagnose's: the copy whose
    key drops I_dim (the K its reduction loops over) is found, naming I_dim; Liger's own key and
    every other tuner in the zoo (fla's norm, keyed by its width) are silent."""
    found = {
        name: [
            f
            for f in static.findings((ZOO / f"{name}.py").read_text(), name, "3.6.0")
            if f.id == "autotune-key-misses-loop-bound"
        ]
        for name in EXPECTED
    }
    assert {n for n, f in found.items() if f} == {"planted_moe_key_without_k"}
    (hit,) = found["planted_moe_key_without_k"]
    assert "I_dim" in hit.title and hit.severity == "medium"


def test_the_h100_run_agrees_with_every_expected_answer():
    """The zoo's diagnoses and sweeps on an H100 (`benchmarks/zoo.py --steps diagnose,sweep`,
    kept in tests/fixtures/zoo_h100.json, the findings, placement and checks only) hold every
    expected answer, the revised ones included: an edit of expected.json that the run does not
    bear out fails here."""
    found = importlib.util.spec_from_file_location("zoo_table", ROOT / "benchmarks" / "zoo.py")
    assert found is not None and found.loader is not None
    table = importlib.util.module_from_spec(found)
    found.loader.exec_module(table)
    ran = json.loads((ROOT / "tests" / "fixtures" / "zoo_h100.json").read_text())
    assert set(ran) == set(EXPECTED)
    for name, expected in EXPECTED.items():
        row = table.compare(name, expected, ran[name])
        differ = {k: v[:2] for k, v in row.items() if isinstance(v, tuple) and v[2] is not True}
        assert not differ, (name, differ)
