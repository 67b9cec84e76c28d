"""benchmarks/attention_variants.py: its CPU smoke run end to end in the interpreter, its check
failing a wrong output, and the overlap it studies read from the sm_90 PTX (no GPU needed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "attention_variants.py"
INTERPRET = {**os.environ, "TRITON_INTERPRET": "1"}


def test_the_smoke_run_checks_every_variant_and_writes_its_json(tmp_path: Path):
    out = tmp_path / "smoke.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-smoke", str(out)],
        capture_output=True, text=True, env=INTERPRET, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert {r["variant"] for r in rows} == {
        "sdpa", "library (autotuned)", "library", "pipelined", "halves"
    }  # fmt: skip
    assert len(rows) == 4 * 5  # fp16 at d 64 and 128, causal and not
    for r in (r for r in rows if r["variant"] != "sdpa"):
        assert "error" not in r and r["correct"]["ok"], r
    assert "pipelined" in proc.stdout and "wrote" in proc.stdout


def test_an_output_one_percent_off_is_judged_wrong():
    code = (
        "import attention_variants as V\n"
        "launch = V.launch\n"
        "V.launch = lambda *a: launch(*a) * 1.01\n"
        "rows = V.run_case(64, 'float16', True, smoke=True)\n"
        "print([r['correct']['ok'] for r in rows[2:]])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=SCRIPT.parent, capture_output=True, text=True,
        env=INTERPRET, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[False, False, False]"


def _softmax_beside_mma(ptx: str) -> bool:
    """Whether some committed wgmma group is still in flight while exp2 runs: an ex2 between a
    commit and the next wait."""
    in_flight = False
    for line in ptx.splitlines():
        if "wgmma.commit_group" in line:
            in_flight = True
        elif re.search(r"wgmma\.wait_group\.sync\.aligned 0;", line):
            in_flight = False
        elif "ex2.approx" in line and in_flight:
            return True
    return False


def _ptx(kernel, q_rows: int) -> str:
    """The sm_90 PTX of `kernel` at d=64, 128 x 64 tiles, 8 warps, 3 stages, fp16."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from workbench.runtime import compat

    t = torch.empty((4 * 4096, 64), dtype=torch.float16)
    rows = (q_rows, 64, 64, q_rows)
    descs = [TensorDescriptor(t, [4 * 4096, 64], [64, 1], [r, 64]) for r in rows]
    meta = {"HEAD_DIM": 64, "CAUSAL": False, "BLOCK_M": 128, "BLOCK_N": 64}
    meta |= {"num_warps": 8, "num_stages": 3}
    return compat.cross_compile(kernel, 90, (*descs, 0.18, 4096), meta).asm["ptx"]


@pytest.mark.parametrize("variant", ["pipelined", "halves"])
def test_the_variants_leave_p_v_in_flight_during_a_softmax_and_the_library_does_not(
    monkeypatch: pytest.MonkeyPatch, variant: str
):
    from kernels import attention as A

    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    import attention_variants as V

    kernel, q_rows, _ = V.VARIANTS[variant]
    assert _softmax_beside_mma(_ptx(kernel, q_rows(128)))
    assert not _softmax_beside_mma(_ptx(A._attn_fwd_tma.fn, 128))


def test_the_walkthrough_shows_the_h100_runs_best_of_each_variant():
    """docs/walkthrough.md's table is the recorded H100 run's: per case SDPA's rate, the
    library's ratio, and each variant's best correct config with its ratio."""
    fixture = ROOT / "tests" / "fixtures" / "attention_variants_h100.json"
    run = json.loads(fixture.read_text())
    text = (ROOT / "docs" / "walkthrough.md").read_text()
    cases: dict[tuple, list[dict]] = {}
    for r in run["rows"]:
        cases.setdefault((r["d"], r["dtype"], r["causal"]), []).append(r)
    assert len(cases) == 8
    for (d, dtype, causal), rows in cases.items():
        by = {r["variant"]: r for r in rows if r["variant"] in ("sdpa", "library (autotuned)")}
        cells = []
        for variant in ("pipelined", "halves", "library"):
            ok = [r for r in rows if r["variant"] == variant and r.get("ms") and r["correct"]["ok"]]
            best = max(ok, key=lambda r: r["vs_sdpa"])
            config = "x".join(map(str, best["config"]))
            cells.append(f"{best['vs_sdpa']:.2f}x ({config})")
            assert best["vs_sdpa"] < by["library (autotuned)"]["vs_sdpa"] + 0.005  # none wins
        name = f"d={d} {'fp16' if dtype == 'float16' else 'bf16'} {'causal' if causal else 'full'}"
        library = by["library (autotuned)"]["vs_sdpa"]
        line = f"| {name} | {by['sdpa']['tflops']:.0f} | {library:.2f}x | {' | '.join(cells)} |"
        assert line in text, line
