"""The zoo on the GPU host: check, diagnosis, bench and sweep of each kernel against its expected
answer (zoo/expected.json).

Every zoo kernel is diagnosed as a user would (`diagnose NAME --path zoo --json`): its check
gives each case the expected status, it is placed on the side of the roofline its arithmetic
intensity puts it, and its first finding above info is the expected one (none for the
originals, the planted bug for each copy). `bench` times every kernel, with the FLOPs of the
reference's matmuls and attention counted where it has them; `sweep` of the autotuned ones lands
within noise of Triton's own pick.

Run with `python -m pytest -m gpu tests/gpu/test_zoo_gpu.py` (liger-kernel and flag-gems
installed); with ZOO_FIXTURES=DIR set, each command's JSON is also written there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT, cli

from workbench.diagnosis.pitfalls import pitfall

pytestmark = pytest.mark.gpu

ZOO = ROOT / "zoo"
EXPECTED: dict[str, dict] = json.loads((ZOO / "expected.json").read_text())["kernels"]
AUTOTUNED = sorted(n for n, e in EXPECTED.items() if e["autotuned"])
SEVERITIES = ("high", "medium", "low", "info")
NOISE = 1.03
"""A sweep winner within 3 % of Triton's pick is the same answer (run-to-run spread)."""


def _run(step: str, name: str, *args: str) -> dict:
    proc = cli(step, name, "--path", str(ZOO), *args, "--json", timeout=900)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    if folder := os.environ.get("ZOO_FIXTURES"):
        Path(folder, f"{step}_{name}.json").write_text(json.dumps(out, indent=1, default=str))
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_diagnose_gives_the_expected_cases_placement_and_first_finding(name):
    expected = EXPECTED[name]
    out = _run("diagnose", name)
    diagnosis = out["diagnosis"]
    check = out["facts"]["check"]
    cases = {f"{c['shape_set']}/{c['layout']}": c["status"] == "passed" for c in check["cases"]}
    order = {s: i for i, s in enumerate(SEVERITIES)}
    ranked = sorted(diagnosis["findings"], key=lambda f: order.get(f["severity"], len(order)))
    above = [(f["id"], f["severity"], f["title"]) for f in ranked if f["severity"] != "info"]
    roof = diagnosis["roofline"] or {}
    got = {
        "cases": cases,
        "bound": roof.get("bound"),
        "first_finding": pitfall(above[0][0]).id if above else None,
    }
    want = {
        "cases": expected["cases"],
        "bound": expected["roofline"]["bound"],
        "first_finding": expected["first_finding"],
    }
    assert got == want, {"findings": above, "roofline": roof.get("text"), "steps": out["steps"]}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bench_times_it_and_knows_its_flops(name):
    expected = EXPECTED[name]
    out = _run("bench", name)
    (record,) = out["result"]["records"]
    assert record["status"] == "ok", record.get("reason")
    assert record["ms"] > 0
    if expected["reference_flops"]:
        assert record["flops"] == pytest.approx(expected["reference_flops"], rel=0.01), record
    assert record["bound"] == expected["roofline"]["bound"], record


@pytest.mark.parametrize("name", AUTOTUNED)
def test_sweep_of_an_autotuned_kernel_agrees_with_triton(name):
    out = _run("sweep", name)
    result = out["result"]
    (shape,) = result["shapes"].values()
    times = {r["label"]: r["ms"] for r in result["rows"] if r.get("ms")}
    if not EXPECTED[name]["correct_given"]:  # every config carries the planted bug
        assert not times and result["summary"]["wrong"] == result["summary"]["configs"]
        return
    pick = shape["triton"]["label"]
    assert pick in times, shape["triton"]
    assert times[pick] <= NOISE * shape["best_ms"], (shape["best"], pick, times[pick])
