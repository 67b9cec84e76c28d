"""The loop's parts that need no GPU: the neighbours a spill is fixed with (compiled for real),
launch facts from a real Nsight Systems export, a trial picked and shown, refusals up front."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from workbench.diagnosis.finding import Finding
from workbench.loop.gather import _nsys_launch_facts
from workbench.loop.trial import Side, Trial, pick, trial_peers
from workbench.profilers.nsysreport import load
from workbench.runtime.errors import WorkbenchError
from workbench.sweep.space import key, neighbours
from workbench.views.diagnosis import trial_text


def test_neighbours_are_one_step_from_the_base_and_start_with_it():
    base = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 16, "num_warps": 4, "num_stages": 3}
    found = neighbours(base)
    assert found[0] == base
    moved = [{k: v for k, v in n.items() if base.get(k) != v} for n in found[1:]]
    assert {"num_warps": 8} in moved and {"num_warps": 2} in moved
    assert {"num_stages": 2} in moved and {"num_stages": 4} in moved
    assert {"BLOCK_M": 128} in moved and {"BLOCK_N": 64} in moved
    assert {"BLOCK_K": 8} not in moved  # tiles stay >= 16
    assert {"maxnreg": 128} in moved
    assert all(len(m) == 1 for m in moved)
    assert len({key(n) for n in found}) == len(found)


def test_launch_facts_from_a_real_nsys_export_of_the_transformer():
    summary = load(str(FIXTURES / "nsys_transformer.sqlite")).to_dict()
    facts = _nsys_launch_facts(summary, None)
    # the whole forward's range: 108 kernels with the GPU idle most of the time between them
    assert facts.launches == 108
    assert facts.idle_fraction is not None and facts.idle_fraction > 0.9
    assert facts.mean_gap_ns and facts.mean_gap_ns > 50_000


def _finding(id: str, fix_id: str | None) -> Finding:
    return Finding(id, "t", "high", {}, fix_id=fix_id)


def test_try_picks_by_finding_id_or_fix_kind_and_names_the_offered_ones():
    found = [_finding("host-sync", None), _finding("register-spill", "config")]
    assert pick(found, "register-spill").id == "register-spill"
    assert pick(found, "config").id == "register-spill"
    with pytest.raises(WorkbenchError) as err:
        pick(found, "host-sync")
    assert "register-spill" in err.value.problem.remedy


def test_a_trial_keeps_the_faster_correct_side_and_shows_both():
    before = Side("num_warps=4", 0.40, True, {"num_warps": 4})
    after = Side("num_warps=8", 0.25, True, {"num_warps": 8})
    t = Trial("k", "register-spill", "config", [4096, 4096], "float16", before, after)
    assert t.speedup == pytest.approx(1.6) and t.kept is after
    text = trial_text(t)
    assert "1.60x" in text and "num_warps=8" in text.splitlines()[-1]
    slower = Trial("k", "register-spill", "config", None, None, before, Side("x", 0.5, True))
    assert slower.kept is before
    wrong = Trial("k", "register-spill", "config", None, None, before, Side("x", 0.1, False))
    assert wrong.kept is before and wrong.to_dict()["kept"]["label"] == "num_warps=4"


def test_a_graph_trial_is_compared_with_eager_pytorch_and_torch_compile():
    rec = {"torch_ms": 0.71, "compile_ms": 0.30, "compile_mode": "reduce-overhead"}
    failed = {"torch_ms": 0.71, "speedup_vs_compile": "n/a: BackendCompilerFailed: boom"}
    eager, graph = Side("launched eagerly", 3.55, True), Side("one CUDA graph", 0.145, True)
    t = Trial("w", "launch-bound", "cuda-graph", [8], "float16", eager, graph)
    t.peers = trial_peers(rec)
    assert Trial.from_dict(t.to_dict()).peers == t.peers
    text = trial_text(t)
    assert "kept vs eager PyTorch (the reference): 4.90x" in text
    assert 'kept vs torch.compile(mode="reduce-overhead"): 2.07x' in text
    no_compile = trial_peers(failed)[1]
    assert no_compile.ms is None and "BackendCompilerFailed" in no_compile.label


H100 = FIXTURES / "diagnose_h100"


@pytest.mark.parametrize("name", ["spill_try", "launch_bound_try", "transformer_try"])
def test_trials_measured_on_the_h100_read_back_and_show_both_sides(name: str):
    stored = json.loads((H100 / f"{name}.json").read_text())["trial"]
    trial = Trial.from_dict(stored)
    assert trial.to_dict() == {"peers": [], **stored}  # recorded before peers were timed
    assert trial.after is not None and trial.after.correct and trial.before.correct
    assert trial.speedup == pytest.approx(trial.before.ms / trial.after.ms)
    assert trial.kept is trial.after  # faster and correct: the fix is kept
    text = trial_text(trial)
    assert f"{trial.speedup:.2f}x" in text and "H100" in text.splitlines()[0]


def test_bench_graph_rows_compare_the_replay_with_eager_pytorch_and_torch_compile():
    from workbench.bench.result import BenchRecord
    from workbench.views.bench import LAUNCH_HEADERS, launch_row

    launch = {"launches": 360, "gpu_busy_ns": 140e3, "mean_gap_ns": 134e3,
              "eager_ms": 3.55, "graph_ms": 0.145, "graph_correct": True}  # fmt: skip
    rec = BenchRecord("transformer", [8, 128, 256, 8, 4], "float16", "H100", ms=3.55,
                      torch_ms=0.71, compile_ms=0.29, launch=launch)  # fmt: skip
    cells = dict(zip(LAUNCH_HEADERS, launch_row(rec)))
    assert cells["graph vs torch"] == "4.90x" and cells["graph vs compile"] == "2.00x"
    assert cells["launches"] == "360" and cells["mean gap"] == "134 us"
    wrong = BenchRecord("t", [1], "float16", "H100", launch={**launch, "graph_correct": False})
    cells = dict(zip(LAUNCH_HEADERS, launch_row(wrong)))
    assert cells["graph correct"].startswith("NO") and cells["graph vs torch"] == "-"


def test_a_config_trial_names_what_changed_and_says_the_rest_once():
    stored = json.loads((H100 / "spill_try.json").read_text())["trial"]
    text = trial_text(Trial.from_dict(stored))
    rows = {line.split()[0]: line.split()[1] for line in text.splitlines()[3:5]}
    assert rows == {"before": "BLOCK_M=256", "after": "BLOCK_M=128"}
    assert "both: HAS_BIAS=False" in text and "num_warps=4" in text


def _h100_facts(name: str):  # type: ignore[no-untyped-def]
    import gzip

    from workbench.diagnosis.facts import Facts

    with gzip.open(H100 / "facts_h100.json.gz", "rt") as f:
        return Facts.from_dict(json.load(f)[name]["facts"])


def test_routing_after_a_kept_fix_is_read_from_the_timing_with_the_fix():
    """The spilling matmul's facts and its trial, both measured on the H100: 7.23x slower than
    torch as launched, 5.57x faster with BLOCK_M=128. After the trial the routing reads the
    kernel with that config (0.14x * 5.57 = 0.77x torch) and says so; a trial whose fix was not
    kept leaves the advice as it was, labelled as the kernel as launched."""
    from workbench.diagnosis import diagnose
    from workbench.loop.diagnose import reroute

    facts = _h100_facts("pitfall_spill")
    diagnosis = diagnose(facts)
    before = diagnosis.routing
    assert before.startswith("use the library call: torch runs 7.23x faster than this kernel")
    trial = Trial.from_dict(json.loads((H100 / "spill_try.json").read_text())["trial"])
    reroute(diagnosis, facts, trial)
    assert diagnosis.routing == (
        "with the fix kept (BLOCK_M=128, 5.57x faster in the trial): use the library call: "
        "torch runs 1.30x faster than this kernel (0.77x torch, at 0.73x of the measured "
        "matmul rate)"
    )
    trial.after = Side(trial.after.label, trial.before.ms * 2, True, trial.after.values)
    assert trial.kept is trial.before  # slower: not kept
    reroute(diagnosis, facts, trial)
    assert diagnosis.routing == f"as launched (the fix tried, BLOCK_M=128, was not kept): {before}"


def test_routing_after_a_graph_replay_kept_is_not_the_replay_advice_again():
    """The launch-bound chain on the H100: as launched, "keep it, replayed from one CUDA graph";
    once the trial kept the replay (16.4x), the routing reads the replayed timing."""
    from workbench.diagnosis import diagnose
    from workbench.loop.diagnose import reroute

    facts = _h100_facts("pitfall_launch_bound")
    diagnosis = diagnose(facts)
    assert diagnosis.routing.startswith("keep it, replayed from one CUDA graph: 2.20x torch")
    trial = Trial.from_dict(json.loads((H100 / "launch_bound_try.json").read_text())["trial"])
    reroute(diagnosis, facts, trial)
    assert diagnosis.routing.startswith(
        "with the fix kept (replayed from one CUDA graph, 16.40x faster in the trial): keep the "
        "Triton kernel: 1.77x torch"
    )


@pytest.mark.parametrize("gpu", [True, False])
def test_diagnose_compiles_the_benched_case_on_a_gpu_and_a_check_case_here(monkeypatch, gpu):
    """The compile facts are of the kernel the bench times: kernel_fn may launch another kernel
    at another shape (attention: a pointer kernel at its small check shapes, on an H100 the
    Gluon one at its bench shapes)."""
    from workbench.catalog.discovery import discover
    from workbench.loop import gather as G
    from workbench.runtime.errors import fail

    asked: dict[str, object] = {}

    def run_job(job, *_args, **_kwargs):
        asked[job.kind] = job.params
        raise fail("not-here", "no job runs in this test", "none")

    monkeypatch.setattr(G.jobs, "run_job", run_job)
    monkeypatch.setattr(G.machine, "has_gpu", lambda: gpu)
    entry = discover().find("attention")
    out = G.gather(entry, G.Options(dtype="bfloat16"), profile=False)
    assert out.shape == [4, 32, 4096, 128]
    assert asked["ir"].shape == ([4, 32, 4096, 128] if gpu else None)
    assert ("bench" in asked) == gpu
