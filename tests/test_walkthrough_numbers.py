"""docs/walkthrough.md's H100 tables are the recorded runs': step 7's from the Gluon study's
fixture, the final numbers from reports/h100/bench.json."""

from __future__ import annotations

import json
import re

from conftest import FIXTURES, ROOT

TEXT = (ROOT / "docs" / "walkthrough.md").read_text()


def _row(label: str, section: str) -> list[str]:
    """The cells after the first of the table row `label` in the section headed `section`."""
    text = TEXT[TEXT.index(section) :]
    match = re.search(rf"^\| {re.escape(label)} \|(.*)\|$", text, re.M)
    assert match, label
    return [cell.strip() for cell in match[1].split("|")]


STUDY_CONFIGS = [(64, 128, 2, 2), (64, 128, 2, 3), (64, 128, 3, 3)]
"""Step 7's columns: (rows, block_n, stages, consumers) of the study's configs."""


def test_step_7_shows_the_gluon_study_run():
    run = json.loads((FIXTURES / "attention_gluon_h100.json").read_text())
    cases: dict[tuple, list[dict]] = {}
    for r in run["rows"]:
        cases.setdefault((r["d"], r["dtype"], r["causal"]), []).append(r)
    assert len(cases) == 8
    for (d, dtype, causal), rows in cases.items():
        by = {r["variant"]: r for r in rows}
        tiles = {tuple(r["config"]): r for r in rows if r["variant"] == "gluon ws"}
        assert all(r["correct"] is True or r["correct"]["ok"] for r in rows)
        label = f"d={d} {'fp16' if dtype == 'float16' else 'bf16'} {'causal' if causal else 'full'}"
        cells = [f"{t['vs_sdpa']:.2f}x" if (t := tiles.get(c)) else "-" for c in STUDY_CONFIGS]
        assert _row(label, "### 7.") == [
            f"{by['sdpa']['tflops']:.0f}",
            f"{by['tl (autotuned)']['vs_sdpa']:.2f}x",
            *cells,
        ]


FINAL = "## The final numbers"


def test_the_final_numbers_are_the_reports_bench_run():
    bench = json.loads((ROOT / "reports" / "h100" / "bench.json").read_text())
    rec = {(r["name"], tuple(r["shape"]), r["dtype"]): r for r in bench["records"]}
    assert all(r["status"] == "ok" for r in rec.values() if r["name"].startswith("attention"))
    for name in ("attention", "attention_causal"):
        cells = _row(name, FINAL)[1:3]
        for cell, dtype in zip(cells, ("float16", "bfloat16")):
            wide, narrow = (
                rec[(name, (4, 32, 4096, d), dtype)]["speedup_vs_torch"] for d in (128, 64)
            )
            assert cell == f"{wide:.2f}x / {narrow:.2f}x SDPA"
    for name, shape in (("layer_norm", (8192, 8192)), ("rms_norm", (8192, 8192))):
        for cell, dtype in zip(_row(name, FINAL)[1:3], ("float16", "bfloat16")):
            r = rec[(name, shape, dtype)]
            assert cell == f"{r['roofline_ratio']:.2f}; {r['vs_copy']:.2f}"
