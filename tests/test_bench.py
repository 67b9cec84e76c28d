"""bench on a CPU machine: the refusal, argument errors, the roofline arithmetic, and the report
generated from benchmark results saved on the GPU host (tests/fixtures/bench_*.json)."""

from __future__ import annotations

import copy
import json
import math
import os
import signal
import subprocess
import sys
import threading

import pytest
from conftest import FIXTURES, ROOT, alive_with, interrupt_once_running

from workbench.bench import campaign, metrics
from workbench.bench import report as benchreport
from workbench.bench.job import run_bench
from workbench.bench.metrics import Timings
from workbench.bench.result import RECORD_FIELDS, BenchResult, Ceilings, Sample
from workbench.catalog.discovery import discover
from workbench.catalog.loader import load_spec
from workbench.cli.main import main
from workbench.run.params import BenchParams
from workbench.runtime.errors import WorkbenchError
from workbench.runtime.grammar import parse_shape, shape_text

BENCH_FIXTURES = sorted(FIXTURES.glob("bench_*.json"))
H100_VECTOR_ADD = FIXTURES / "bench_h100_vector_add.json"
H100_PARTIAL = FIXTURES / "bench_h100_partial.json"
"""`bench --all` on an H100, stopped by SIGINT partway; one kernel's checks ran out of memory."""


def _cli_in_child(argv: list[str], reports) -> tuple[dict, str]:  # type: ignore[no-untyped-def]
    """Run the CLI in a fresh interpreter; report its exit status and which heavy modules loaded."""
    code = (
        "import sys, json; from workbench.cli.main import main; rc = main(sys.argv[1:]);"
        "heavy = sorted(m for m in ('torch', 'triton') if m in sys.modules);"
        "print(json.dumps({'rc': rc, 'heavy': heavy}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "WORKBENCH_DEVICE": "cpu", "WORKBENCH_REPORTS": reports},
        timeout=60,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.parametrize("argv", [["bench", "vector_add"], ["bench", "--all"]])
def test_bench_without_gpu_refuses_plainly_and_starts_nothing(argv, _reports):
    outcome, stderr = _cli_in_child(argv, str(_reports))
    assert outcome == {"rc": 2, "heavy": []}
    assert "`bench` needs a CUDA GPU and this machine has none" in stderr
    assert not _reports.exists()  # no child ran: no run folder, no store


def test_an_unknown_kernel_is_named_before_the_missing_gpu(capsys):
    assert main(["bench", "nosuch", "--graph"]) == 2
    assert "no kernel named 'nosuch'" in capsys.readouterr().err


def test_bench_refusal_as_json(capsys):
    assert main(["bench", "vector_add", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "needs-gpu" and "CUDA GPU" in error["cause"]


@pytest.mark.parametrize(
    ("text", "shape"),
    [("4096x4096", (4096, 4096)), ("268435456", (268435456,)), (" 8,2X3 ", (8, 2, 3))],
)
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text", ["", "4096x", "x", "12xq", "0x5", "-3", "1.5", "4096 x 4096 x"])
def test_parse_shape_rejects(text):
    with pytest.raises(WorkbenchError) as info:
        parse_shape(text)
    assert info.value.problem.kind == "bad-shape"
    assert "--shape 4096x4096" in info.value.problem.remedy


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_bad_arguments_are_refused_before_anything_runs(device, monkeypatch, capsys, _reports):
    monkeypatch.setenv("WORKBENCH_DEVICE", device)  # even on a GPU host: no job starts
    assert main(["bench", "vector_add", "--shape", "12xq"]) == 2
    assert "'12xq' is not a list of integers" in capsys.readouterr().err
    assert main(["bench", "--all", "--shape", "64"]) == 2
    assert "--shape applies to one kernel" in capsys.readouterr().err
    assert main(["bench"]) == 2
    assert main(["bench", "vector_add", "--all"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["bench", "vector_add", "--resume"]) == 2
    assert "--resume goes with --all" in capsys.readouterr().err
    assert main(["bench", "vector_add", "--redo", "vector_add"]) == 2
    assert "--redo picks kernels" in capsys.readouterr().err
    assert not _reports.exists()


def test_floor_is_the_slower_of_bytes_and_flops():
    # 3 GB at 3000 GB/s = 1 ms; 1 GFLOP at 745 TFLOP/s is far less: memory-bound.
    assert metrics.floor_ms(3e9, 1e9, 3000.0, 745.0) == pytest.approx((1.0, "memory"))
    # 8192^3 matmul: 2 * 8192^3 FLOP at 745 TFLOP/s = 1.47585 ms; 403 MB at 3 TB/s = 0.134 ms.
    floor, bound = metrics.floor_ms(3 * 8192**2 * 2, 2 * 8192**3, 3000.0, 745.0)
    assert bound == "compute" and floor == pytest.approx(1.475854, rel=1e-6)
    assert metrics.floor_ms(None, 2e12, 3000.0, 1000.0) == pytest.approx((2.0, "compute"))
    assert metrics.floor_ms(3e9, None, 3000.0, 1000.0) == pytest.approx((1.0, "memory"))
    assert metrics.floor_ms(None, None, 3000.0, 1000.0) == (None, None)


def test_rates_ratio_and_speedup():
    assert metrics.rates(2.0, 6e9, 4e12) == pytest.approx((3000.0, 2000.0))
    assert metrics.rates(2.0, None, None) == (None, None)
    assert metrics.roofline_ratio(2.0, 1.0) == 0.5
    assert metrics.roofline_ratio(2.0, None) is None
    assert metrics.speedup(3.0, 1.5) == 2.0
    assert metrics.speedup(None, 1.5) is None


def test_matmul_rate_takes_the_best_size_and_falls_back_to_bf16():
    ceil = Ceilings(
        "GPU",
        "t",
        "tr",
        3000.0,
        {"bfloat16": {"8192": 745.0, "4096": 700.0}, "float32": {"8192": 350.0}},
        50 << 20,
        "now",
    )
    assert ceil.matmul_rate("bfloat16") == 745.0
    assert ceil.matmul_rate("float32") == 350.0
    assert ceil.matmul_rate("float16") == 745.0
    assert ceil.matmul_rate(None) == 745.0


def _load(path) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(path.read_text())


def test_the_real_fixtures_are_there():
    assert H100_VECTOR_ADD in BENCH_FIXTURES and H100_PARTIAL in BENCH_FIXTURES


@pytest.mark.parametrize("path", BENCH_FIXTURES, ids=lambda p: p.stem)
def test_fixture_records_follow_the_schema_and_the_arithmetic(path):
    doc = _load(path)
    assert doc["schema"] == benchreport.SCHEMA and doc["records"]
    ceil = doc["ceilings"]
    assert ceil["device"] == doc["device"] and ceil["copy_gbps"] > 0
    for rec in doc["records"]:
        assert set(RECORD_FIELDS) <= set(rec)
        assert rec["device"] == doc["device"]
        assert isinstance(rec["shape"], list) and all(isinstance(d, int) for d in rec["shape"])
        if rec["status"] != "ok":
            assert rec["status"] in ("failed", "error") and rec["reason"] and rec["ms"] is None
            continue
        assert rec["check"]["status"] == "passed"
        assert 0 < rec["ms_p20"] <= rec["ms"] <= rec["ms_p80"]
        gbps, tflops = metrics.rates(rec["ms"], rec["bytes"], rec["flops"])
        assert rec["gbps"] == pytest.approx(gbps) and rec["tflops"] == pytest.approx(tflops)
        rate = max(
            ceil["matmul_tflops"].get(rec["dtype"], ceil["matmul_tflops"]["bfloat16"]).values()
        )
        floor, bound = metrics.floor_ms(rec["bytes"], rec["flops"], ceil["copy_gbps"], rate)
        assert (rec["floor_ms"], rec["bound"]) == (pytest.approx(floor), bound)
        assert rec["roofline_ratio"] == pytest.approx(floor / rec["ms"])
        assert 0.3 < rec["roofline_ratio"] < 1.1  # past 1.1 the byte model or the timing is off
        assert rec["speedup_vs_torch"] == pytest.approx(rec["torch_ms"] / rec["ms"])
        compiled = rec["speedup_vs_compile"]
        assert compiled == pytest.approx(rec["compile_ms"] / rec["ms"]) or compiled.startswith(
            "n/a"
        )


@pytest.mark.parametrize("path", BENCH_FIXTURES, ids=lambda p: p.stem)
def test_markdown_from_a_real_result(path):
    doc = _load(path)
    text = benchreport.markdown(doc)
    assert text.startswith(f"# Benchmarks on {doc['device']}\n")
    assert f"copy {benchreport.num(doc['ceilings']['copy_gbps'])} GB/s" in text
    names = {f"| {rec['name']} |" for rec in doc["records"]}
    rows = [line for line in text.splitlines() if any(line.startswith(n) for n in names)]
    assert len(rows) == len(doc["records"])
    for rec, row in zip(doc["records"], rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        if rec["status"] != "ok":
            assert cells[3] == rec["status"].upper() and not any(cells[4:])
            continue
        assert cells[:4] == [
            rec["name"],
            shape_text(rec["shape"]),
            rec["dtype"],
            benchreport.num(rec["ms"], 4),
        ]
        cell = dict(zip(benchreport.TABLE_HEADERS, cells))
        assert cell["roofline"] == f"{rec['roofline_ratio']:.2f}" and cell["bound"] == rec["bound"]
        assert cell["vs torch"] == f"{rec['speedup_vs_torch']:.2f}x"
        assert cell["vs copy"] == "-"  # stored before a same-size copy was timed
    clean = all(r["status"] == "ok" for r in doc["records"]) and not doc.get("interrupted")
    assert ("## Notes" in text) != clean


def test_markdown_of_a_real_partial_run():
    doc = _load(H100_PARTIAL)
    assert doc["interrupted"] and doc["kernels"][-1]["bench"] is None
    text = benchreport.markdown(doc)
    notes = text.split("## Notes")[1].strip().splitlines()
    oom = [n for n in notes if "softmax_online" in n]
    assert len(oom) == 3 and all(
        "ERROR: correctness check error: OutOfMemoryError" in n for n in oom
    )
    assert all(len(n) < 250 for n in oom)  # one line each; bench.json keeps the whole message
    assert f"- {doc['kernels'][-1]['name']}: interrupted before it finished" in notes
    assert text.count("| ERROR |") == 3


def test_markdown_says_what_failed():
    doc = _load(H100_VECTOR_ADD)
    broken = copy.deepcopy(doc)
    first, second = broken["records"][0], broken["records"][1]
    first.update(status="failed", reason="correctness check failed: 12 of 99 outputs not written")
    second["speedup_vs_compile"] = "n/a: BackendCompilerFailed: no C compiler"
    broken["kernels"] = [
        {
            "name": "softmax",
            "check": {"status": "timeout", "reason": "ran past 900 s"},
            "bench": None,
        }
    ]
    broken["interrupted"] = True
    text = benchreport.markdown(broken)
    assert "| FAILED |" in text and "12 of 99 outputs not written" in text
    assert "| n/a |" in text and "torch.compile n/a: BackendCompilerFailed" in text
    assert "softmax: check timeout: ran past 900 s" in text
    assert "interrupted" in text
    for rec in broken["records"][1:]:
        rec["compile_mode"] = "max-autotune"
    text = benchreport.markdown(broken)
    assert text.count("torch.compile(mode='max-autotune')") == 1  # one note per kernel
    empty = benchreport.markdown(benchreport.new_doc())
    assert "(no results)" in empty and "unknown device" in empty


def test_write_replaces_both_files(tmp_path):
    doc = _load(H100_VECTOR_ADD)
    json_path, md_path = benchreport.write(doc, tmp_path / "h100")
    assert json.loads(json_path.read_text()) == doc
    assert md_path.read_text() == benchreport.markdown(doc)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(WorkbenchError) as info:
        benchreport.write(doc, blocker / "out")
    assert info.value.problem.kind == "report-unwritable"


def test_number_format():
    assert benchreport.num(4322.72) == "4,323"
    assert benchreport.num(0.7451840043, 4) == "0.7452"
    assert benchreport.num(None) == "-"
    assert math.isclose(float(benchreport.num(94.97)), 95.0)


def test_resume_keeps_finished_kernels_and_drops_the_interrupted_one(tmp_path):
    doc = _load(H100_PARTIAL)
    kept = benchreport.resume(doc)
    names = [k["name"] for k in doc["kernels"]]
    assert [k["name"] for k in kept["kernels"]] == names[:-1]  # the last one never finished
    assert kept["records"] == [r for r in doc["records"] if r["name"] in names[:-1]]
    assert kept["device"] == doc["device"] and not kept.get("interrupted")
    assert not benchreport.is_clean(kept)  # softmax_online's cases ran out of memory
    with pytest.raises(ValueError):
        benchreport.resume({**doc, "schema": 0})
    benchreport.write(doc, tmp_path)
    assert campaign.resumed(tmp_path)["kernels"] == kept["kernels"]
    assert campaign.resumed(tmp_path / "absent")["kernels"] == []
    again = campaign.resumed(tmp_path, frozenset({names[0]}))
    assert [k["name"] for k in again["kernels"]] == names[1:-1]
    assert all(r["name"] != names[0] for r in again["records"])
    (tmp_path / "bench.json").write_text("{not json")
    with pytest.raises(WorkbenchError) as info:
        campaign.resumed(tmp_path)
    assert info.value.problem.kind == "bad-report"


def test_one_kernel_run_updates_its_rows_and_keeps_the_rest(tmp_path):
    saved = _load(H100_PARTIAL)
    name = saved["kernels"][0]["name"]
    mine = [r for r in saved["records"] if r["name"] == name]
    redone = {**copy.deepcopy(mine[0]), "ms": mine[0]["ms"] / 2}
    fresh = {
        **benchreport.new_doc(),
        "device": saved["device"],
        "kernels": [{"name": name, "file": "k.py", "check": None, "bench": {"status": "ok"}}],
        "records": [redone],
    }
    benchreport.write(saved, tmp_path)
    merged = campaign.merged(tmp_path, fresh)
    assert [k["name"] for k in merged["kernels"]] == [k["name"] for k in saved["kernels"]]
    assert merged["kernels"][0]["file"] == "k.py"
    assert merged["kernels"][0]["check"] == saved["kernels"][0]["check"]  # kept: none ran now
    assert len(merged["records"]) == len(saved["records"])  # one row replaced, none added
    assert merged["records"] == [redone, *saved["records"][1:]]  # in place
    new_kernel = {**fresh, "kernels": [{**fresh["kernels"][0], "name": "new"}], "records": []}
    assert campaign.merged(tmp_path, new_kernel)["kernels"][-1]["name"] == "new"
    assert campaign.merged(tmp_path / "absent", fresh) is fresh
    with pytest.raises(WorkbenchError) as info:
        campaign.merged(tmp_path, {**fresh, "device": "another GPU"})
    assert info.value.problem.kind == "bad-report" and "another GPU" in info.value.problem.cause


def test_is_clean_needs_every_check_and_case():
    doc = _load(H100_VECTOR_ADD)
    assert not benchreport.is_clean(doc)  # a single bench runs no full check
    doc["kernels"][0]["check"] = {"status": "correct", "reason": ""}
    assert benchreport.is_clean(doc)
    doc["records"][0]["device"] = "another GPU"
    assert "several devices" in benchreport.markdown(doc)
    doc["records"][0]["status"] = "failed"
    assert not benchreport.is_clean(doc)


def _replay(records: list[dict]):  # type: ignore[no-untyped-def]
    """What the H100 gave for each case of a saved run, as `measure` hands it to run_bench."""
    by_case = {(tuple(r["shape"]), r["dtype"]): r for r in records}

    def measure(shape, dtype, seed):  # type: ignore[no-untyped-def]
        rec = by_case[(tuple(shape), dtype)]
        if rec["status"] != "ok":
            reason = rec["reason"].split(": ", 1)[1]
            return Sample(rec["check"], reason=reason, problem=rec["problem"])
        compiled = rec["compile_ms"] if rec["compile_ms"] is not None else rec["speedup_vs_compile"]
        timings = Timings(
            **{k: rec[k] for k in ("ms", "ms_p20", "ms_p80", "torch_ms", "bytes", "flops")},
            compiled=compiled,
            input_sets=rec["input_sets"],
        )
        return Sample(rec["check"], timings)

    return measure


@pytest.mark.parametrize("path", [H100_VECTOR_ADD, H100_PARTIAL], ids=lambda p: p.stem)
def test_run_bench_rebuilds_the_h100_records_from_their_timings(path):
    """The real bench loop and arithmetic on an H100's raw timings give back its saved records."""
    doc = _load(path)
    ceil = Ceilings.from_dict(doc["ceilings"])
    catalog = discover([str(ROOT / "kernels")])
    for kernel in {r["name"]: None for r in doc["records"]}:
        saved = [r for r in doc["records"] if r["name"] == kernel]
        events: list[dict] = []
        result = run_bench(
            load_spec(catalog.find(kernel)),
            events.append,
            ceil,
            _replay(saved),
            shapes=[r["shape"] for r in saved if r["dtype"] == saved[0]["dtype"]],
            dtypes=list(dict.fromkeys(r["dtype"] for r in saved)),
        )
        got = result.to_dict()
        assert [e["record"] for e in events if e["event"] == "record"] == got["records"]
        assert BenchResult.from_dict(got).to_dict() == got
        assert len(got["records"]) == len(saved)
        for new, old in zip(got["records"], saved):
            for key, value in old.items():
                assert new[key] == (pytest.approx(value) if isinstance(value, float) else value)
        ok = sum(r["status"] == "ok" for r in saved)
        assert got["summary"] == {
            "cases": len(saved),
            "ok": ok,
            "failed": 0,
            "errors": len(saved) - ok,
        }
        assert got["correct"] == (ok == len(saved)) and got["device"] == doc["device"]


CAMPAIGN = '''"""Kernels for a cancelled `bench --all`: torch wrappers, one may hang."""

import os
import time

import torch

from workbench.catalog.spec import KernelSpec


def hangs(x):
    if "WORKBENCH_TEST_RUNNING" in os.environ:  # a test interrupts once the kernel runs
        open(os.environ["WORKBENCH_TEST_RUNNING"], "w").close()
    while True:
        time.sleep(0.05)


def _inputs(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype),)  # on the CPU whatever the device: no GPU here


SPECS = [NAMES]
'''
SPEC = """
    KernelSpec(
        name="{name}",
        kernel_fn={fn},
        reference_fn=torch.clone,
        make_inputs=_inputs,
        shapes={{"check": [(64,)], "bench": [(64,)]}},
        dtypes=("float32",),
    ),"""


def _campaign(tmp_path, names: list[str]):  # type: ignore[no-untyped-def]
    module = tmp_path / "campaign_kernels.py"
    specs = "".join(
        SPEC.format(name=n, fn="hangs" if n.endswith("hangs") else "torch.clone") for n in names
    )
    module.write_text(CAMPAIGN.replace("NAMES", specs + "\n"))  # discovery reads literal names
    return module


def test_a_cancelled_campaign_keeps_the_finished_kernels_for_a_resume(tmp_path):
    """The cancel comes once the second kernel is checked: its bench job is killed, the report
    is marked interrupted, and a resume keeps the first kernel and runs the second again."""
    module = _campaign(tmp_path, ["first_copy", "second_copy"])
    entries = discover([str(module)]).kernels
    out, cancel, said = tmp_path / "out", threading.Event(), []

    def say(text: str) -> None:
        said.append(text)
        if sum(line.startswith("  check:") for line in said) == 2:
            cancel.set()

    doc = campaign.run_all(entries, [], BenchParams(), out, 120, say, cancel=cancel)
    first, second = doc["kernels"]
    assert first["check"]["status"] == "correct" and first["bench"]["status"] == "error"
    assert first["bench"]["reason"].startswith("`bench` needs a CUDA GPU")  # it ran to its end
    assert second["check"]["status"] == "correct" and second["bench"] is None
    assert said[-1] == "  bench: cancelled" and doc["interrupted"]
    assert json.loads((out / "bench.json").read_text()) == json.loads(json.dumps(doc))
    assert "second_copy: interrupted before it finished" in (out / "README.md").read_text()
    assert [k["name"] for k in campaign.resumed(out)["kernels"]] == ["first_copy"]


def test_ctrl_c_kills_the_running_job_and_says_how_to_resume(tmp_path):
    """The first Ctrl-C of `bench --all` kills the hanging check's child (Ctrl-C never reaches
    its process session), writes the report of what finished and ends with the way to resume.
    WORKBENCH_DEVICE=cuda lets the command start here; the jobs then fail fast without CUDA."""
    module = _campaign(tmp_path, ["first_copy", "then_hangs"])
    out = tmp_path / "out"
    env = {**os.environ, "WORKBENCH_DEVICE": "cuda", "WORKBENCH_REPORTS": str(tmp_path / "r")}
    cmd = [sys.executable, "-m", "workbench", "bench", "--all", "--path", str(module)]
    marker = "then_hangs"  # in the hanging check's command line only
    proc = interrupt_once_running([*cmd, "--out", str(out)], env, marker, signal.SIGINT)
    stderr = proc.stderr
    assert proc.returncode == 130, stderr
    assert not alive_with(marker)
    assert "then_hangs\n  check: cancelled" in stderr
    assert "1 of 2 kernel(s) finished" in stderr and "the same command with --resume" in stderr
    doc = json.loads((out / "bench.json").read_text())
    assert doc["interrupted"] and doc["kernels"][0]["bench"] is not None
    assert doc["kernels"][1]["check"] is None
    assert [k["name"] for k in campaign.resumed(out)["kernels"]] == ["first_copy"]
