"""Bench history: real H100 and H200 bench results stored as runs, read back as points, and the
regression rule (newest against the earlier median, beyond the measured noise, like with like)."""

from __future__ import annotations

import copy
import json
import secrets
import time

import pytest
from conftest import FIXTURES, cli

from workbench.bench import history
from workbench.bench.timing_rules import NOISE
from workbench.run.store import RunRecord, Store

H100 = json.loads((FIXTURES / "bench_h100_vector_add.json").read_text())
H200 = json.loads((FIXTURES / "bench_h200_vector_add.json").read_text())
PARTIAL = json.loads((FIXTURES / "bench_h100_partial.json").read_text())
DAY = 86400.0


def bench_result(doc: dict, kernel: str, scale: float = 1.0, triton: str | None = None) -> dict:
    """A bench run's stored result (`BenchResult.to_dict()`) made of a bench.json's records of
    one kernel, its times scaled by `scale` (the figures derived from them are left as they are:
    the history reads times only)."""
    records = copy.deepcopy([r for r in doc["records"] if r["name"] == kernel])
    for r in records:
        for key in ("ms", "ms_p20", "ms_p80"):
            if r.get(key) is not None:
                r[key] *= scale
    ceilings = {**doc["ceilings"], "triton": triton or doc["ceilings"]["triton"]}
    return {
        "kernel": kernel,
        "device": doc["device"],
        "mode": "gpu",
        "correct": all(r["status"] == "ok" for r in records),
        "summary": {"cases": len(records)},
        "ceilings": ceilings,
        "records": records,
    }


def put(
    kind: str,
    kernel: str,
    result: dict | None,
    started: float,
    *,
    status: str = "ok",
    artifacts: str | None = None,
    file: str | None = None,
    problem: dict | None = None,
) -> str:
    """Record one run as the jobs do, at a chosen start time."""
    run_id = f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(started))}-{secrets.token_hex(3)}"
    Store().record(
        RunRecord(
            id=run_id,
            kind=kind,
            kernel=kernel,
            file=file,
            params={},
            status=status,
            started=started,
            seconds=1.0,
            host="h100-host",
            mode=(result or {}).get("mode") or "gpu",
            summary=None,
            result=result,
            problem=problem,
            artifacts=artifacts,
        )
    )
    return run_id


def put_bench(doc: dict, kernel: str, scales: list[float], start: float, **kw: str) -> list[str]:
    """One bench run per scale, a day apart, oldest first."""
    return [
        put("bench", kernel, bench_result(doc, kernel, s, **kw), start + i * DAY)
        for i, s in enumerate(scales)
    ]


def _points(kernel: str = "vector_add") -> list[history.HistoryPoint]:
    return history.points(Store().history(kernel, "bench", 1000))


T0 = time.time() - 30 * DAY


def test_points_are_one_per_timed_case_of_each_run_with_gpu_and_triton():
    put_bench(H100, "vector_add", [1.0], T0)
    put_bench(PARTIAL, "softmax_online", [1.0], T0)  # its three cases errored: no points
    put("bench", "vector_add", None, T0 + DAY, status="crash")  # no result: no points
    pts = _points()
    assert [(p.shape, p.dtype) for p in pts] == [
        ((268435456,), "float32"),
        ((268435456,), "float16"),
        ((268435456,), "bfloat16"),
    ]
    first = pts[0]
    assert first.ms == H100["records"][0]["ms"] and first.p80 == H100["records"][0]["ms_p80"]
    assert (first.gpu, first.triton) == ("NVIDIA H100 80GB HBM3", "3.6.0")
    assert _points("softmax_online") == []


def test_a_slower_newest_run_is_a_regression_and_a_noise_sized_change_is_not():
    # run-to-run jitter of a few tenths of a percent, as the H100 showed; then 8 % slower
    put_bench(H100, "vector_add", [1.0, 1.003, 0.998, 1.002, 1.08], T0)
    found = history.regressions(_points())
    assert {(r.dtype, r.earlier) for r in found} == {
        ("float32", 4),
        ("float16", 4),
        ("bfloat16", 4),
    }
    fp32 = next(r for r in found if r.dtype == "float32")
    assert fp32.baseline_ms == pytest.approx(H100["records"][0]["ms"] * 1.001)  # the median
    assert fp32.slowdown == pytest.approx(1.08 / 1.001)
    assert fp32.noise_ms < fp32.ms - fp32.baseline_ms
    assert "+7.9%" in fp32.text and fp32.run_id in fp32.text

    put_bench(H100, "vector_add", [1.01], T0 + 10 * DAY)  # 1 % over the median: noise
    trends = history.trend(_points())
    assert history.regressions(_points()) == []
    assert {t.verdict for t in trends} == {"within noise"}
    assert all(t.noise_ms / t.baseline_ms >= NOISE for t in trends)


def test_noise_widens_with_the_runs_own_spread():
    """The same 5 % step is a regression after steady runs but within noise after runs that
    spread by more than that."""
    put_bench(H100, "vector_add", [1.0, 1.0, 1.0, 1.05], T0)
    assert len(history.regressions(_points())) == 3
    steady = history.trend(_points())[0]

    put_bench(H100, "vector_add", [0.9, 1.1, 0.95, 1.0, 1.05], T0 + 5 * DAY)
    jittery = history.trend(_points())[0]
    assert jittery.noise_ms > steady.noise_ms
    assert history.regressions(_points()) == []


def test_another_gpu_or_triton_version_is_not_compared():
    # the H200 runs are faster; a newer H100 run is not their regression
    put_bench(H200, "vector_add", [1.0, 1.0, 1.0], T0)
    put_bench(H100, "vector_add", [1.0], T0 + 5 * DAY)
    # nor is a newer Triton's slower run a regression of the older Triton's
    put_bench(H100, "vector_add", [0.8, 0.8], T0 + 6 * DAY, triton="3.5.0")
    trends = history.trend(_points())
    assert history.regressions(_points()) == []
    cases = {(t.case.gpu, t.case.triton, t.case.dtype): len(t.points) for t in trends}
    assert cases[("NVIDIA H200", "3.6.0", "float32")] == 3
    assert cases[("NVIDIA H100 80GB HBM3", "3.6.0", "float32")] == 1
    assert cases[("NVIDIA H100 80GB HBM3", "3.5.0", "float32")] == 2
    assert {t.verdict for t in trends if len(t.points) == 1} == {"first run"}


def test_history_command_shows_the_trend_and_flags_the_regression():
    put_bench(H100, "vector_add", [1.0, 1.002, 0.999, 1.15], T0)
    out = cli("history", "vector_add")
    assert out.returncode == 0, out.stderr
    assert "bench times per case" in out.stdout and "REGRESSION" in out.stdout
    assert out.stdout.count("regression: vector_add 268435456") == 3

    trend = cli("history", "vector_add", "--trend", "--json")
    assert trend.returncode == 1  # a regression
    data = json.loads(trend.stdout)
    assert {r["dtype"] for r in data["regressions"]} == {"float32", "float16", "bfloat16"}
    assert [len(c["points"]) for c in data["cases"]] == [4, 4, 4]
    assert data["cases"][0]["verdict"] == "REGRESSION"


def test_history_lists_every_kind_of_run_with_its_verdict():
    """A diagnosis made here on CPU (it records its check and compile as runs of their own) and
    the trial measured on the H100 (tests/fixtures): `history NAME` lists each, newest first,
    and `--kind diagnose` the diagnosis and its trial."""
    out = cli("diagnose", "pitfall_tail")
    assert out.returncode == 0, out.stderr
    trial = json.loads((FIXTURES / "diagnose_h100" / "spill_try.json").read_text())["trial"]
    put("diagnose-try", "pitfall_tail", trial, time.time() + 1)
    listed = cli("history", "pitfall_tail")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[3:] for line in listed.stdout.splitlines()[4:] if line.strip()]
    kinds = [r[0] for r in rows]
    assert kinds[0] == "diagnose-try" and sorted(kinds[1:]) == ["check", "diagnose", "ir"]
    said = {r[0]: " ".join(r[4:]) for r in rows}
    assert said["diagnose-try"] == "fix kept: 5.57x faster"
    assert said["diagnose"] == "first no-boundary-mask, 1 above info"
    assert said["check"] == "NOT correct: tail not covered (missing mask)"
    assert said["ir"] == "1 of 1 compiled for sm_90"
    only = cli("history", "pitfall_tail", "--kind", "diagnose").stdout.splitlines()[4:]
    assert [line.split()[3] for line in only] == ["diagnose-try", "diagnose"]
