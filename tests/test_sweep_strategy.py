"""Search strategies and their replay, on the CPU: each strategy run against recorded GPU sweeps
(every file below, and any sweep.json dropped in tests/fixtures/spaces/), checked against what a
brute force over the recorded rows says; the budget grammar; `sweep replay` end to end; the key
buckets across shapes on hand-made tables."""

from __future__ import annotations

import itertools
import json
import math
from random import Random

import pytest
from conftest import FIXTURES, cli, cpu_cli

from workbench.runtime.errors import WorkbenchError
from workbench.sweep import analysis, buckets, replay, strategy
from workbench.sweep.job import _recorded
from workbench.sweep.result import SweepResult
from workbench.sweep.strategy import Budget, Space, parse_budget
from workbench.views.sweep import bucket_lines, replay_lines

RECORDED = [
    FIXTURES / "sweep_h100_matmul16.json",
    FIXTURES / "sweep_h200x2_matmul64.json",
    FIXTURES / "sweep_gpu_three_name.json",
    *sorted((FIXTURES / "spaces").glob("*.json")),
]
"""Exhaustive GPU sweeps: the real fixtures, and the big spaces benchmarks/record_spaces.py
records (copied into tests/fixtures/spaces/)."""
SEARCHES = ("random", "coordinate", "halving")


def _shapes(path) -> list[replay.Recorded]:
    result = replay.read(json.loads(path.read_text()), path.name)
    return replay.recorded(result, path.name)


def _counted(rec: replay.Recorded, seed: int) -> tuple[strategy.Evaluate, list]:
    """The replay's evaluator, and the list of every (label, samples) it was asked."""
    inner, asked = replay.evaluator(rec, seed), []

    def evaluate(values, samples):
        asked.append((strategy.key(values), samples))
        return inner(values, samples)

    return evaluate, asked


def _search(rec: replay.Recorded, name: str, budget: Budget, seed: int):
    evaluate, asked = _counted(rec, seed)
    start = rec.start()[0] if name == "coordinate" else None
    return strategy.search(name, rec.space, evaluate, budget, seed, start), asked


def _near(rec: replay.Recorded) -> float:
    return rec.best["ms"] * (1.0 + replay.NEAR)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_exhaustive_finds_the_best_in_exactly_the_space_size(path):
    for rec in _shapes(path):
        trace, asked = _search(rec, "exhaustive", Budget(), 0)
        assert len(asked) == len(trace.evaluations) == len(rec.rows)
        assert [a[0] for a in asked] == [r["label"] for r in rec.rows]  # the space's order
        assert trace.pick == rec.best["label"] and trace.stopped == "searched"
        first = next(i for i, r in enumerate(rec.rows, 1) if (r["ms"] or math.inf) <= _near(rec))
        assert replay.to_near(trace, rec) == first


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
@pytest.mark.parametrize("name", SEARCHES)
def test_a_search_never_times_a_config_twice_and_keeps_its_budget(path, name):
    for rec in _shapes(path):
        size = len(rec.rows)
        for limit, seed in itertools.product((1, 3, max(1, size // 4), None), range(4)):
            trace, asked = _search(rec, name, Budget(evaluations=limit), seed)
            assert len(asked) == len(set(asked)) == len(trace.evaluations)
            if name != "halving":  # halving times its survivors again, each time with more samples
                assert len({label for label, _ in asked}) == len(asked)
            for label in {label for label, _ in asked}:
                rounds = [s if s is not None else math.inf for lb, s in asked if lb == label]
                assert rounds == sorted(rounds)
            assert len(asked) <= (limit or math.inf)
            assert trace.stopped in ("searched", "budget")
            # the same seed, the same search
            assert _search(rec, name, Budget(evaluations=limit), seed)[1] == asked


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_replay_agrees_with_a_brute_force_over_the_rows(path):
    result = replay.read(json.loads(path.read_text()), path.name)
    report = replay.replay(result, path.name, strategy.STRATEGIES, Budget(), seeds=5)
    for rec, shape in zip(replay.recorded(result, path.name), report["shapes"]):
        assert shape["best"] == rec.best["label"] and shape["configs"] == len(rec.rows)
        ms = {r["label"]: r["ms"] if r["status"] == "ok" else math.inf for r in rec.rows}
        runs = {s["strategy"]: s for s in shape["strategies"]}
        # random: the seed's permutation, timed in order; the pick is the fastest so far
        for seed in range(5):
            order = Random(seed).sample(range(len(rec.rows)), len(rec.rows))
            labels = [rec.rows[i]["label"] for i in order]
            brute = next(n for n in range(1, len(labels) + 1)
                         if min(ms[k] for k in labels[:n]) <= _near(rec))  # fmt: skip
            assert runs["random"]["to_near"]["per_seed"][seed] == brute
        for name, s in runs.items():
            per_seed = s["to_near"]["per_seed"]
            traces = [replay.run(rec, name, Budget(), seed) for seed in range(5)]
            assert per_seed == [replay.to_near(t, rec) for t in traces]
            # the pick after each timing: the fastest by the latest timing of each config
            for t in traces:
                latest: dict[str, float] = {}
                for e, pick in zip(t.evaluations, t.picks):
                    latest[e["label"]] = e["ms"] if e["ms"] is not None else math.inf
                    assert ms[pick] if pick else True
                    assert latest[pick] == min(latest.values())
            ranked = sorted(per_seed, key=lambda n: (n is None, n or 0))
            assert s["to_near"]["median"] == ranked[2] and s["to_near"]["p90"] == ranked[4]
            within = sum(n is not None and n <= math.ceil(len(rec.rows) / 4) for n in per_seed)
            assert s["within_share"]["seeds"] == within
        # with the whole space to spend, the searches that end only when all is timed find the
        # best; halving's light rounds may drop it on a noisy row, but never time past its rounds
        for name in ("exhaustive", "random", "coordinate"):
            assert runs[name]["final_vs_best"] == 1.0 and runs[name]["reached"] == 5
        assert runs["halving"]["spent"] <= strategy._rounds(len(rec.rows))


def _table(ms, spread: float = 0.0, seconds: tuple[float, float] | None = None) -> dict:
    """A recorded GPU sweep at one shape from {values tuple: ms}; axes A, B, num_warps."""
    rows = []
    for (a, b, w), t in ms.items():
        row = {
            "shape": [1024],
            "label": f"A={a},B={b},num_warps={w}",
            "values": {"A": a, "B": b, "num_warps": w},
            "status": "ok",
            "ms": t,
            "p20": t - spread,
            "p80": t + spread,
            "samples": 10,
            "calls": 13,
            "resources": {"spill_bytes": 0, "occupancy": {"percent": 50.0, "limiter": "warps"}},
        }
        if seconds:
            row["check_s"], row["timing_s"] = seconds
        rows.append(row)
    head = dict(kernel="k", mode="gpu", arch="sm_90", gpu="NVIDIA H100", gpu_index=None)
    head |= dict(triton_version="3.6.0", dtype="float16", space="auto", jobs=2, shard=None)
    return {**head, "rows": rows, "complete": True}


def _bowl() -> dict:
    """A 4x4x3 product space whose time falls steadily toward A=64, B=32, num_warps=8."""
    grid = itertools.product((16, 32, 64, 128), (8, 16, 32, 64), (2, 4, 8))
    return {
        (a, b, w): 1.0 + abs(math.log2(a / 64)) + 0.5 * abs(math.log2(b / 32)) + 0.1 * (8 // w)
        for a, b, w in grid
    }


def test_coordinate_descent_walks_one_axis_step_at_a_time_to_the_bottom():
    result = replay.read(_table(_bowl()), "bowl")
    (rec,) = replay.recorded(result, "bowl")
    trace, asked = _search(rec, "coordinate", Budget(evaluations=20), 0)
    # every config alike statically: it starts from the space's first, and ends at the bottom
    assert asked[0][0] == "A=16,B=8,num_warps=2"
    assert trace.pick == "A=64,B=32,num_warps=8" and len(asked) <= 20 < len(rec.rows)
    space = Space([r["values"] for r in rec.rows])
    moves = [p for i, p in enumerate(trace.picks) if i == 0 or p != trace.picks[i - 1]]
    for here, there in zip(moves, moves[1:]):  # each move: one axis, one step
        a, b = space.ranks[space.index(here)], space.ranks[space.index(there)]
        assert sorted(abs(x - y) for x, y in zip(a, b)) == [0, 0, 1]


def test_coordinate_starts_from_tritons_pick_else_the_static_best():
    rows = _table({(16, 8, 4): 1.0, (32, 8, 4): 2.0, (64, 8, 4): 3.0})["rows"]
    rows[2]["resources"] = {"spill_bytes": 0, "occupancy": {"percent": 75.0}}
    rows[1]["resources"] = {"spill_bytes": 8, "occupancy": {"percent": 100.0}}
    label, why = strategy.static_start(rows, None)  # the spill-free config of most occupancy
    assert label == rows[2]["label"] and "static facts" in why
    assert strategy.static_start(rows, rows[0]["label"]) == (rows[0]["label"], "Triton's pick")
    assert strategy.static_start(rows, "not in the space")[0] == rows[2]["label"]


def test_neighbours_in_a_space_that_is_not_a_full_product():
    space = Space(
        [
            {"A": 16, "w": 4},
            {"A": 32, "w": 4},
            {"A": 64, "w": 8},  # no A=64,w=4: the nearest along A changes w too
            {"A": 128, "w": 4},
        ]
    )
    assert space.axes == ["A", "w"]
    assert space.neighbours(1, "A") == [0, 3]  # A=64 needs w changed too: A=128,w=4 is nearer
    assert space.neighbours(0, "A") == [1]
    assert space.neighbours(2, "w") == [1]


def test_halving_keeps_the_fastest_third_and_sizes_its_rounds_to_the_budget():
    times = {(a, b, w): float(i + 1) for i, (a, b, w) in enumerate(_bowl())}
    result = replay.read(_table(dict(list(times.items())[:27])), "t")  # exact light timings
    (rec,) = replay.recorded(result, "t")
    trace, asked = _search(rec, "halving", Budget(), 0)
    rounds = [[lb for lb, s in asked if s == n] for n in (3, 9, None)]
    assert [len(r) for r in rounds] == [27, 9, 3]
    speed = {r["label"]: r["ms"] for r in rec.rows}
    assert sorted(rounds[1], key=speed.get) == sorted(speed, key=speed.get)[:9]
    assert trace.pick == rec.best["label"]
    trace, asked = _search(rec, "halving", Budget(evaluations=20), 0)
    assert len(asked) == 20 == 13 + 5 + 2  # the largest first round whose rounds fit


def test_a_time_budget_stops_once_the_seconds_are_spent():
    result = replay.read(_table(_bowl(), seconds=(0.5, 1.0)), "t")
    (rec,) = replay.recorded(result, "t")
    trace, _ = _search(rec, "random", Budget(seconds=4.0), 0)
    assert len(trace.evaluations) == 3 and trace.seconds == 4.5 and trace.stopped == "budget"
    # halving's light timings cost their share of the calls, and a config's check counts once
    trace, asked = _search(rec, "halving", Budget(), 0)
    first = trace.evaluations[0]
    assert first["samples"] == 3 and first["seconds"] == pytest.approx(0.5 + 1.0 * 6 / 13)
    again = next(e for e in trace.evaluations if e["samples"] == 9)
    assert again["seconds"] == pytest.approx(1.0 * 12 / 13)
    report = replay.replay(result, "t", ["halving"], Budget(seconds=10.0), seeds=2)
    assert report["shapes"][0]["strategies"][0]["seconds_to_near"]["median"] is not None


def test_within_two_percent_counts_a_pick_exactly_two_percent_slower():
    result = replay.read(_table({(16, 8, 4): 1.02, (32, 8, 4): 1.0, (64, 8, 4): 1.5}), "t")
    (rec,) = replay.recorded(result, "t")
    assert replay.to_near(replay.run(rec, "exhaustive", Budget(), 0), rec) == 1


def test_light_timings_are_drawn_from_the_recorded_spread():
    result = replay.read(_table({(16, 8, 4): 1.0, (32, 8, 4): 1.01}, spread=0.05), "t")
    (rec,) = replay.recorded(result, "t")
    light = [replay.evaluator(rec, seed)(rec.rows[0]["values"], 3)["ms"] for seed in range(40)]
    assert len(set(light)) > 30 and 0.9 < min(light) and max(light) < 1.1
    assert replay.evaluator(rec, 0)(rec.rows[0]["values"], None)["ms"] == 1.0
    flat = _table({(16, 8, 4): 1.0, (32, 8, 4): 1.01})
    for row in flat["rows"]:  # recorded without quantiles: read, explained and replayed
        row["p20"] = row["p80"] = None
    report = replay.replay(replay.read(flat, "t"), "t", ["halving"], Budget(), seeds=1)
    assert any("replay exactly" in n for n in report["notes"])


@pytest.mark.parametrize(
    "text, budget",
    [("40", Budget(evaluations=40)), ("30s", Budget(seconds=30.0)),
     (" 2.5M ", Budget(seconds=150.0)), ("1", Budget(evaluations=1))],
)  # fmt: skip
def test_budget_grammar(text, budget):
    assert parse_budget(text) == budget


@pytest.mark.parametrize("text", ["0", "1.5", "abc", "-3", "0s", "", "30h", "5 timings"])
def test_budget_grammar_refuses_with_the_flag_and_the_forms(text):
    with pytest.raises(WorkbenchError) as err:
        parse_budget(text)
    assert err.value.problem.kind == "bad-budget" and err.value.problem.source == "usage"
    assert "--budget" in err.value.problem.cause and "30s" in err.value.problem.remedy


def test_default_budget_is_the_whole_space_for_exhaustive_else_a_quarter():
    assert strategy.default_budget("exhaustive", 100) == Budget()
    assert strategy.default_budget("coordinate", 100) == Budget(evaluations=25)
    assert strategy.default_budget("random", 3) == Budget(evaluations=1)


def test_sweep_replay_end_to_end(tmp_path):
    fixture = str(FIXTURES / "sweep_h200x2_matmul64.json")
    out = cli("sweep", "replay", fixture, "--strategy", "random,coordinate", "--seeds", "3",
              "--budget", "16", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (shape,) = report["shapes"]
    assert shape["configs"] == 64 and report["seeds"] == 3
    assert [s["strategy"] for s in shape["strategies"]] == ["random", "coordinate"]
    assert all(s["spent"] <= 16 for s in shape["strategies"])
    assert report["budget"]["evaluations"] == 16
    text = cli("sweep", "replay", fixture, "--seeds", "2")
    assert text.returncode == 0 and "coordinate starts from Triton's pick" in text.stdout
    for name in strategy.STRATEGIES:
        assert f"\n{name} " in text.stdout
    # what cannot be replayed is refused, naming why
    data = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())
    static = tmp_path / "static.json"
    static.write_text(json.dumps({**data["result"], "mode": "cross-compile"}))
    searched = tmp_path / "searched.json"
    searched.write_text(json.dumps({**data["result"], "strategy": {"name": "coordinate"}}))
    for path, words in ((static, "holds no timings"), (searched, "did not time every config"),
                        (FIXTURES / "sweep_matmul_space.txt", "not JSON")):  # fmt: skip
        out = cli("sweep", "replay", str(path))
        assert out.returncode == 2 and words in out.stderr and "remedy" in out.stderr
    out = cli("sweep", "replay", fixture, "--budget", "30s")
    assert out.returncode == 2 and "no per-config seconds" in out.stderr


def test_replay_text_says_each_strategy_and_the_start():
    result = replay.read(_table(_bowl()), "bowl")
    report = replay.replay(result, "bowl", strategy.STRATEGIES, Budget(), seeds=3)
    text = "\n".join(replay_lines(report))
    assert "48 configs, best A=64,B=32,num_warps=8" in text
    assert "coordinate starts from the static facts' best" in text
    exhaustive = next(s for s in report["shapes"][0]["strategies"] if s["strategy"] == "exhaustive")
    first = 1 + list(_bowl()).index((64, 32, 8))
    assert exhaustive["to_near"]["median"] == first


def test_a_static_sweep_with_a_strategy_says_nothing_is_timed(tmp_path_factory):
    out, _ = cpu_cli(tmp_path_factory, "sweep", "sweep_three_name", "--path",
                     str(FIXTURES / "sweep_three_name.py"), "--strategy", "coordinate",
                     "--budget", "1", "--json")  # fmt: skip
    result = json.loads(out.stdout)["result"]
    assert result["mode"] == "cross-compile" and result.get("strategy") is None
    assert {r["status"] for r in result["rows"]} == {"static", "failed"}
    assert any("chooses which configs to time" in n and "nothing is timed" in n
               for n in result["notes"])  # fmt: skip
    refused = cli("sweep", "sweep_three_name", "--path", str(FIXTURES / "sweep_three_name.py"),
                  "--strategy", "annealing")  # fmt: skip
    assert refused.returncode == 2 and "annealing" in refused.stderr
    # a budget with no strategy to bound would be silently dropped by the exhaustive sweep
    unbounded = cli("sweep", "sweep_three_name", "--path", str(FIXTURES / "sweep_three_name.py"),
                    "--budget", "10")  # fmt: skip
    assert unbounded.returncode == 2 and "add --strategy" in unbounded.stderr


def test_rows_of_an_earlier_run_answer_what_they_timed():
    round_ = {"samples": 3, "ms": 1.2, "p20": 1.1, "p80": 1.3, "timing_s": 0.01}  # as kept
    light = {"status": "ok", "ms": 1.2, "stop": "light", "rounds": [round_]}
    assert _recorded(light, None) is None  # a light timing does not answer a full one
    assert _recorded(light, 3)["ms"] == 1.2 and _recorded(light, 9) is None
    full = {"status": "ok", "ms": 1.0, "stop": "precise", "check_s": 0.3}
    assert _recorded(full, None)["check_s"] == 0.0
    assert _recorded(full, 3)["ms"] == 1.0  # a full timing answers a light one
    assert _recorded({"status": "timeout", "ms": None}, None)["status"] == "timeout"
    assert _recorded({"status": "ok", "ms": None}, None) is None  # compiled, not timed yet
    assert _recorded({"status": "skipped", "ms": None}, None) is None


def _ratios(table: dict) -> dict:
    return {shape: dict(zip("abc", times)) for shape, times in table.items()}


def test_key_buckets_merge_adjacent_powers_of_two_while_one_config_fits():
    # batch sizes: a wins up to 4, b from 8 on; 6 and 8 share the bucket (4, 8]
    table = {(1,): (1.0, 1.2, 1.5), (2,): (1.0, 1.3, 1.5), (4,): (1.04, 1.0, 1.5),
             (6,): (1.3, 1.0, 1.02), (8,): (1.2, 1.03, 1.0), (64,): (1.5, 1.2, 1.0)}  # fmt: skip
    found = buckets.key_buckets(_ratios(table), 0.05)
    assert found["dims"] == [0] and found["note"] == ""
    got = [(b["ranges"], b["shapes"], b["config"]) for b in found["buckets"]]
    assert got == [([[1, 4]], [[1], [2], [4]], "a"), ([[5, 64]], [[6], [8], [64]], "c")]
    assert found["buckets"][0]["worst"] == 1.04
    lines = bucket_lines(found)
    assert "1..4: a (worst 1.040x)  <- 1, 2, 4" in lines[1]


def test_key_buckets_in_two_dimensions_and_a_cell_no_config_fits():
    table = {(16, 1): (1.0, 1.1, 1.1), (16, 2): (1.0, 1.1, 1.1),
             (4096, 1): (1.1, 1.0, 1.3), (4096, 2): (1.1, 1.0, 1.3)}  # fmt: skip
    found = buckets.key_buckets(_ratios(table), 0.05)
    assert found["dims"] == [0, 1]
    got = sorted((b["ranges"], b["config"]) for b in found["buckets"])
    assert got == [([[9, 16], [1, 2]], "a"), ([[2049, 4096], [1, 2]], "b")]
    # 3 and 4 share the cell (2, 4] and no config fits both: that bucket has none; the others
    # still merge around it
    clash = {(1,): (1.0, 1.2, 1.2), (2,): (1.0, 1.2, 1.2), (3,): (1.0, 1.2, 1.2),
             (4,): (1.2, 1.0, 1.2), (64,): (1.0, 1.0, 1.0)}  # fmt: skip
    found = buckets.key_buckets(_ratios(clash), 0.05)
    assert "[[3], [4]]" in found["note"]
    got = [(b["ranges"], b["config"]) for b in found["buckets"]]
    assert got == [([[1, 2]], "a"), ([[3, 4]], None), ([[33, 64]], "a")]
    assert buckets.key_buckets(_ratios({(8,): (1.0, 1.1, 1.2)}), 0.05) == {}


def test_a_sweeps_rows_give_its_key_buckets():
    rows = []
    for batch, times in {1: (1.0, 2.0), 2: (1.0, 1.9), 512: (1.8, 1.0)}.items():
        for label, ms in zip("ab", times):
            rows.append({"shape": [batch], "label": label, "values": {"X": label},
                         "status": "ok", "ms": ms, "p20": ms, "p80": ms})  # fmt: skip
    head = {k: v for k, v in _table({}).items() if k != "rows"}
    result = SweepResult.from_dict({**head, "rows": rows})
    assert [b["config"] for b in result.buckets["buckets"]] == ["a", "b"]
    assert result.buckets == analysis.buckets(rows)
    assert SweepResult.from_dict(result.to_dict()).buckets == result.buckets


def test_a_strategy_sweep_reads_back_and_prints_what_it_chose(capsys):
    from workbench.cli.sweep import show

    recorded = _table({(16, 8, 4): 1.0, (32, 8, 4): 1.3, (64, 8, 4): 2.0})
    first, second, third = recorded["rows"]
    first.update(chosen_by="coordinate", order=1)
    second.update(chosen_by="coordinate", order=2, stop="light", samples=3)
    third.update(status="skipped", reason="coordinate chose others (2 timings)", ms=None)
    recorded["strategy"] = {
        "name": "coordinate",
        "budget": {"evaluations": 2, "seconds": None},
        "seed": 0,
        "shapes": {"1024": {"configs": 3, "evaluations": 2, "seconds": 0.5, "pick": first["label"],
                            "stopped": "budget",
                            "start": {"label": first["label"], "from": "Triton's pick"}}},
    }  # fmt: skip
    result = SweepResult.from_dict(recorded)
    assert SweepResult.from_dict(result.to_dict()) == result
    assert result.summary["skipped"] == 1 and result.summary["ok"] == 2
    why = {r["label"]: r["why"] for r in result.rows}
    assert why[third["label"]] == "skipped: coordinate chose others (2 timings)"
    assert why[second["label"]] == "30% slower in a 3-sample timing: dropped by halving"
    show(result, [])
    out = capsys.readouterr().out
    assert "coordinate: 2 timing(s) among 3 configs (budget: 2 timings, 0.5 s)" in out
    assert "started from Triton's pick" in out
