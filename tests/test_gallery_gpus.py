"""benchmarks/gallery_gpus.sh, the gallery spread over a host's GPUs, run here on the CPU with
two named lanes (the runs use the interpreter; what a lane does with its card is the same), and
benchmarks/gallery_ncu.py on the diagnoses an H100 brought back."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli

SCRIPT = ROOT / "benchmarks" / "gallery_gpus.sh"


def gallery(dest: Path, *names: str, timeout: float = 240, **env: str) -> str:
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(dest), *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "GPUS": "0 1", **env},
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return (dest / "steps.txt").read_text()


def ran(steps: str) -> dict[str, tuple[int, str, int, int]]:
    """Each run's label -> (rc, the GPU its lane gave it, its start and end in s)."""
    found = re.finditer(r"^(\S+) rc=(\d+) (\d+) s gpu (\S+) from (\d+) s$", steps, re.M)
    return {m[1]: (int(m[2]), m[4], int(m[5]), int(m[5]) + int(m[3])) for m in found}


def test_the_runs_are_spread_over_the_lanes_and_spill_is_warm_after_cold(tmp_path: Path):
    """One lane takes spill_cold, alone; the other both diagnoses at once, then spill_warm, which
    waits for them and for spill_cold."""
    dest = tmp_path / "gallery"
    steps = gallery(dest, "vector_add", "softmax", "pitfall_spill", PER_GPU="2")
    runs = ran(steps)
    assert set(runs) == {"spill_cold", "softmax", "vector_add", "spill_warm", "report"}, steps
    assert all(run[0] == 0 for run in runs.values()), steps
    cold, warm, side = runs["spill_cold"], runs["spill_warm"], [runs["softmax"], runs["vector_add"]]
    assert {cold[1], warm[1]} == {"0", "1"} and {run[1] for run in side} == {warm[1]}, steps
    assert abs(side[0][2] - side[1][2]) <= 1, steps  # side by side
    assert warm[2] >= max(cold[3], side[0][3], side[1][3]) - 1, steps
    assert runs["report"][2] >= max(run[3] for run in runs.values() if run[1] != "-") - 1
    assert (dest / "queue.txt").read_text().split("\n")[0].split()[:2] == ["alone", "spill_cold"]
    assert "lanes: GPUs 0 1, 2 diagnoses at a time each" in (dest / "versions.txt").read_text()
    for label in ("vector_add", "spill_warm"):
        assert json.loads((dest / f"{label}.json").read_text())["diagnosis"]["kernel"] in (
            "vector_add",
            "pitfall_spill",
        )
    with tarfile.open(f"{dest}.tgz") as tgz:
        packed = set(tgz.getnames())
        final = tgz.extractfile("gallery/steps.txt").read().decode()
    assert {"gallery/softmax.json", "gallery/report/index.md", "gallery/versions.txt"} <= packed
    assert "report rc=0" in final and "ncu missing in" in final


def test_the_whole_gallery_is_listed_longest_first_and_cut_at_the_deadline(tmp_path: Path):
    """Past the deadline every run says so and the report still comes: the list is the catalog's
    diagnoses, longest first, then what needs a card alone, each after the run it follows."""
    dest = tmp_path / "gallery"
    steps = gallery(dest, DEADLINE="61", timeout=120)
    catalog = [k["name"] for k in json.loads(cli("list", "--json").stdout)["kernels"]]
    queue = [line.split() for line in (dest / "queue.txt").read_text().splitlines()]
    labels = [item[1] for item in queue]
    assert labels[0] == "spill_cold"
    diagnoses = [item for item in queue if item[0] == "side"]
    assert sorted(item[1] for item in diagnoses) == sorted(set(catalog) - {"pitfall_spill"})
    assert queue.index(diagnoses[-1]) < labels.index("transformer_graph")
    assert labels.index("transformer") < labels.index("transformer_graph")
    assert [item[3] for item in queue if item[1] == "spill_try"] == ["spill_warm"]
    assert {"sweep_matmul", "transformer_try", "launch_bound_try", "bench_softmax_online"} <= set(
        labels
    )
    skipped = re.findall(r"^(\S+) skipped: deadline$", steps, re.M)
    assert sorted(skipped) == sorted(labels), steps
    assert re.search(r"^report rc=0 ", steps, re.M), steps


def test_two_parts_split_the_list_keeping_each_run_with_those_that_follow_it(tmp_path: Path):
    """PARTS=2: each run in exactly one part, and a run after another in the same part as it."""
    queues = []
    for part in ("1", "2"):
        dest = tmp_path / f"part{part}"
        steps = gallery(dest, DEADLINE="61", PARTS="2", PART=part, timeout=120)
        assert re.search(r"^report rc=0 ", steps, re.M), steps
        assert f"part {part} of 2" in (dest / "versions.txt").read_text()
        queues.append([line.split() for line in (dest / "queue.txt").read_text().splitlines()])
    whole = gallery(tmp_path / "whole", DEADLINE="61", timeout=120)
    assert whole and len(queues[0]) > 10 and len(queues[1]) > 10
    labels = [{item[1] for item in queue} for queue in queues]
    everything = (tmp_path / "whole" / "queue.txt").read_text().splitlines()
    assert labels[0].isdisjoint(labels[1])
    assert labels[0] | labels[1] == {line.split()[1] for line in everything}
    for queue, own in zip(queues, labels):
        assert all(item[3] in own for item in queue if item[3] != "-"), queue
    assert {"spill_cold", "spill_warm", "spill_try"} <= labels[0] or {
        "spill_cold",
        "spill_warm",
        "spill_try",
    } <= labels[1]


@pytest.mark.parametrize("parts", [("2", "3"), ("0", "1"), ("two", "1")])
def test_a_part_outside_its_parts_is_refused_before_anything_is_made(tmp_path: Path, parts):
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "g")],
        capture_output=True,
        text=True,
        env={**os.environ, "GPUS": "0 1", "PARTS": parts[0], "PART": parts[1]},
        timeout=60,
    )
    assert proc.returncode == 2 and "PART=2" in proc.stderr, proc.stderr
    assert not (tmp_path / "g").exists()


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this host lists its GPUs")
def test_no_gpu_to_spread_over_says_so(tmp_path: Path):
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "g")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "GPUS"},
        timeout=60,
    )
    assert proc.returncode == 2
    assert "nvidia-smi lists no GPU" in proc.stderr and "GPUS='0 1'" in proc.stderr


def _ncu():
    spec = importlib.util.spec_from_file_location(
        "gallery_ncu", ROOT / "benchmarks" / "gallery_ncu.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_profile_that_failed_is_taken_again_and_a_try_is_not(tmp_path: Path):
    ncu = _ncu()
    h100 = FIXTURES / "diagnose_h100"
    for name in ("pitfall_atomics", "pitfall_small_grid", "spill_try"):
        shutil.copy(h100 / f"{name}.json", tmp_path)
    (tmp_path / "cut_off.json").write_text("")  # a run killed at its limit
    assert ncu.failed(tmp_path) == []
    assert ncu.summary(tmp_path).splitlines() == [
        "ncu: 2 profiled, median 12.5 s, max 13.3 s",
        "ncu missing in 0: -",  # a fix tried profiles nothing, and misses nothing
    ]
    for name in ("pitfall_atomics", "spill_try"):
        out = json.loads((tmp_path / f"{name}.json").read_text())
        out["diagnosis"]["missing"]["ncu"] = "ncu-failed (see its log)"
        out["steps"].append({"step": "ncu", "seconds": 3.0})
        (tmp_path / f"{name}.json").write_text(json.dumps(out))
    assert ncu.failed(tmp_path) == ["pitfall_atomics"]
