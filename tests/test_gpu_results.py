"""The sweep's and the cache doctor's parent-side logic on real GPU outputs (recorded on the H100
and on two H200s by benchmarks/gpu_verify.sh): ranking, explanations, the config set to paste,
the work queue's rows, and the findings a re-timing makes."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import FIXTURES

from workbench.cache import findings, scan
from workbench.cache.result import CacheReach
from workbench.ir.config import shared_values
from workbench.sweep import analysis, space
from workbench.sweep.queue import HEAD, WorkQueue
from workbench.sweep.result import SweepResult
from workbench.views.sweep import rows_of

H100 = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
H200X2 = json.loads((FIXTURES / "sweep_h200x2_matmul64.json").read_text())["result"]
CACHE = FIXTURES / "cache_gpu"


def _fresh(result: dict) -> SweepResult:
    """The result as its job recorded it (rows without explanations), read back: explained anew."""
    raw = copy.deepcopy(result)
    for row in raw["rows"]:
        row.pop("why", None)
    return SweepResult.from_dict(raw)


@pytest.mark.parametrize("printed", [H100, H200X2], ids=["h100", "h200x2-merged"])
def test_gpu_sweep_results_read_back_as_printed(printed):
    result = SweepResult.from_dict(printed)
    assert SweepResult.from_dict(result.to_dict()) == result
    # all but the rows' explanations and the config to profile, which are today's (worded
    # anew since the GPU host ran)
    unexplained = lambda d: {  # noqa: E731
        **d,
        "rows": [{**r, "why": "", "brief": "", "model": None} for r in d["rows"]],
        "shapes": {k: {**v, "profile": None} for k, v in d["shapes"].items()},
    }
    assert unexplained(result.to_dict()) == unexplained(printed)
    assert printed["rows"][1]["why"] != result.rows[1]["why"]  # the stored words stay stored


def test_h100_sweep_ranks_explains_and_picks_the_set_to_paste():
    result = _fresh(H100)
    [(shape, info)] = result.shapes.items()
    timed = [r for r in result.rows if r["status"] == analysis.TIMED]
    assert len(timed) == 16 and info["ranked"][0] == info["best"]
    best = min(timed, key=lambda r: r["ms"])
    assert info["best"] == best["label"] == H100["shapes"][shape]["best"]
    assert info["ranked"] == H100["shapes"][shape]["ranked"]
    # a single config is within 5% of the best at one shape: that is the list to paste
    assert result.minimal_set["labels"] == [best["label"]]
    why = {r["label"]: r["why"] for r in result.rows}
    assert why[best["label"]] == "best"
    slowest = max(timed, key=lambda r: r["ms"])
    assert why[slowest["label"]].startswith(f"{round(100 * (slowest['ms'] / best['ms'] - 1))}%")
    # every loser the static model can size says why; a GEMM that wins at 12.5% occupancy
    # does not lose to its neighbour for a lower figure alone
    slower = [r for r in timed if not analysis.within_noise(r, best) and r is not best]
    left = [r for r in slower if "profile it" in why[r["label"]]]
    assert len(slower) == 14 and len(left) <= 2
    assert not any("occupancy capped" in why[r["label"]] for r in slower)
    cells = rows_of(result.rows)
    # named by what differs (BLOCK_M=128 as BM128, num_warps=8 as w8); GROUP_M=8, which every
    # config shares, is said once above the table
    assert shared_values([r.get("values") for r in result.rows]) == {"GROUP_M": 8}
    assert cells[0][1] == "BM128 BN256 BK64 w8 s4" and cells[0][4] == "1.00x"
    assert len({c[1] for c in cells}) == 16


def test_triton_pick_within_noise_raises_no_disagreement():
    info = next(iter(_fresh(H100).shapes.values()))
    assert info["triton"]["label"] and info["finding"] == ""
    # the same pick made 20% slower than the best is a finding
    slow = _fresh(H100)
    shape = next(iter(slow.triton))
    loser = max((r for r in slow.rows if r["status"] == analysis.TIMED), key=lambda r: r["ms"])
    slow.triton[shape]["label"] = loser["label"]
    info = next(iter(analysis.summarize(slow).shapes.values()))
    assert "Triton's autotuner picked" in info["finding"]


def test_the_rows_of_two_h200s_through_one_queue_give_the_recorded_winner():
    """The 64 configs timed on two H200s, handed out by the queue to two workers and their rows
    taken back as they landed: the rows in plan order, the same best, one shard per worker."""
    assert H200X2["gpu"] == "NVIDIA H200" and len(H200X2["shards"]) == 2
    rows = H200X2["rows"]
    assert len({r["label"] for r in rows}) == 64
    head = {k: H200X2.get(k, {}) for k in HEAD} | {"host": "h", "jobs": 8}
    work = WorkQueue(120.0)
    for i, w in enumerate(("gpu0", "gpu1")):
        work.on_event(w, {"event": "ready", "head": {**head, "gpu_index": str(i)}})
    work.on_event("gpu0", {"event": "want", "n": 1})
    plan = [{"row": {**r, "status": "ok", "ms": None}, "todo": True} for r in rows]
    shape = rows[0]["shape"]
    answer = work.on_event("gpu0", {"event": "plan", "shape": shape, "configs": plan,
                                    "triton": False, "last": True})  # fmt: skip
    assert answer == []
    by_label = {r["label"]: r for r in rows}
    while not work.finished:
        for w in ("gpu0", "gpu1"):
            for who, message in work.on_event(w, {"event": "want", "n": 3}):
                for item in message.get("items", []):
                    row = by_label[space.key(item["values"])]
                    work.on_event(who, {"event": "config", "id": item["id"], "row": row})
    merged = work.result()
    assert [r["label"] for r in merged.rows] == [r["label"] for r in rows]
    assert merged.summary["configs"] == 64 and merged.complete
    assert merged.summary["best"] == H200X2["summary"]["best"]
    assert [s["worker"] for s in merged.shards] == ["gpu0", "gpu1"]
    assert sum(s["rows"] for s in merged.shards) == 64 and merged.gpu_index == "0,1"


@pytest.mark.parametrize("name", sorted(p.name for p in CACHE.glob("*.json")))
def test_gpu_cache_job_results_read_back_as_recorded(name):
    recorded = json.loads((CACHE / name).read_text())["reach"]
    reach = CacheReach.from_dict(recorded)
    assert reach.to_dict() == recorded and CacheReach.from_dict(reach.to_dict()) == reach
    assert reach.verify and reach.mode == "cuda"


def test_a_key_too_narrow_measured_on_the_h100_is_a_finding_with_its_fix():
    report = json.loads((CACHE / "h100_scenario2_report.json").read_text())
    [v] = report["reach"]["verify"]
    found = findings.measured_findings(report["reach"]["verify"])
    [narrow] = [f for f in found if f.id == "autotune-key-too-narrow"]
    assert "stride_bk" in narrow.fix and "stride_bn" in narrow.fix
    assert f"{v['narrow'][0]['best_ms']:.4g} ms" in narrow.evidence["detail"]
    assert not any(f.id == "autotune-served-stale" for f in found)  # served = fastest here
    twin = copy.deepcopy(report["reach"]["verify"])
    twin[0]["narrow"] = []  # a key that already tells the layouts apart
    assert findings.measured_findings(twin) == []


def test_an_h100_tuning_served_on_an_h200_is_re_timed_there():
    report = json.loads((CACHE / "h200_verify_h100_tuning.json").read_text())
    [v] = report["reach"]["verify"]
    assert v["device"] == "NVIDIA H200" and v["status"] == "served from disk"
    assert not v["stale"] and not findings.measured_findings([v])
    stale = {**v, "stale": True, "fastest": {**v["fastest"], "config": "BM: 256, BN: 128"}}
    [f] = findings.measured_findings([stale])
    assert f.id == "autotune-served-stale" and "NVIDIA H200" in f.evidence["detail"]


def test_a_gpu_written_autotune_file_is_read_with_its_served_config():
    found = scan.scan(str(CACHE / "h100_autotune"))
    [tuned] = found.tuned
    assert tuned.kernel == "narrow_matmul_kernel" and tuned.key[:3] == [4096, 4096, 4096]
    served = tuned.timings[tuned.best]
    assert served["config"]["kwargs"] == {"BM": 128, "BN": 256, "BK": 64}
    assert served["ms"][0] == min(t["ms"][0] for t in tuned.timings)


def test_the_sweep_report_says_how_to_profile_the_largest_unexplained_gap(capsys):
    from workbench.cli.sweep import show

    result = _fresh(H100)
    show(result, ["benchmarks/sweep_matmul16.py"])
    out = capsys.readouterr().out
    [hint] = [line for line in out.splitlines() if line.startswith("profile the largest")]
    best = next(r for r in result.rows if r["why"] == "best")
    left = [r for r in result.rows if "profile it" in r["why"]]
    # not the slowest config (the model sizes its 2.3x), the loser it leaves the most of
    widest = max(left, key=lambda r: r["ms"])
    assert (
        f"--pin {widest['label']} " in hint
        and widest["label"] != result.shapes["4096x4096x4096"]["ranked"][-1]
    )
    assert widest["ms"] > best["ms"] * 1.05
    assert "--case 4096x4096x4096:bfloat16 --pin BLOCK_M=256,BLOCK_N=128," in hint
    assert hint.endswith("--path benchmarks/sweep_matmul16.py")
