"""compute-sanitizer around a check: where it is looked for, the command that wraps the worker,
and its report read into access records at the kernel's lines.

The reports under tests/fixtures/sanitizer/SAMPLE_* are written by hand to the documented text
format (their first lines say so); the real logs `benchmarks/sanitizer_capture.sh` brings back
from the GPU host join them as fixtures. Running the tool is tests/gpu/test_sanitizer_gpu.py's.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli, cpu_env

from workbench.check.result import CaseResult, CheckReport
from workbench.diagnosis import Facts, diagnose
from workbench.profilers import sanitizer
from workbench.runtime.errors import WorkbenchError

SAMPLES = FIXTURES / "sanitizer"
RACE_FILE = str(ROOT / "kernels" / "pitfalls" / "pitfall_race.py")


def sample(name: str) -> str:
    text = (SAMPLES / f"SAMPLE_{name}.txt").read_text()
    assert text.startswith("# SAMPLE"), "a real capture replaces the sample: drop SAMPLE_"
    return text


def test_memcheck_reads_each_invalid_access_with_its_line_and_distance():
    report = sanitizer.parse(sample("memcheck_off_by_one"), "memcheck")
    assert report["errors"] == 3 and "other" not in report
    read, write, wide = report["accesses"]
    assert (read["kind"], read["line"], read["side"], read["farthest"]) == ("read", 29, "after", 1)
    assert (write["kind"], write["line"], write["tensor"]) == (
        "write",
        30,
        "the allocation of 4,000 bytes",
    )
    assert wide["tensor"] == "the allocation of 12,000 bytes"  # another case's output
    assert read["kernel"] == "_scale_le_kernel" and read["file"].endswith("pitfall_off_by_one.py")
    assert read["thread"] == "thread (104,0,0) in block (0,0,0)"


def test_racecheck_reads_an_analysis_split_over_lines_and_names_the_kernels_file():
    report = sanitizer.parse(sample("racecheck_race"), "racecheck", [RACE_FILE])
    (race,) = report["accesses"]  # the error and the warning are one race at one line
    assert (race["kind"], race["count"], race["line"]) == ("race", 384 + 32, 41)
    assert race["file"] == RACE_FILE  # the bare file name resolved to the kernel's path
    assert race["kernel"] == "_reverse_racy_kernel" and report["hazards"] == 2
    assert "write at pitfall_race.py:41" in race["detail"]


def test_initcheck_and_synccheck_reports_become_their_kinds():
    init = sanitizer.parse(sample("initcheck_uninit"), "initcheck")
    (r,) = init["accesses"]
    assert (r["kind"], r["count"], r["line"], init["errors"]) == ("uninitialised-read", 2, 29, 2)
    sync = sanitizer.parse(sample("synccheck_divergent"), "synccheck")
    (s,) = sync["accesses"]
    assert (s["kind"], s["what"], s["line"]) == ("sync", "Divergent thread(s) in block", 12)


def test_cuda_memchecks_older_location_form_and_unread_messages():
    text = (
        "========= Invalid __global__ read of size 8\n"
        "=========     at 0x00000908 in /src/k.py:17:_k\n"
        "=========     by thread (3,0,0) in block (1,0,0)\n"
        "=========     Address 0x7f00000004 is misaligned\n"
        "=========\n"
        "========= Something this parser does not know\n"
        "=========\n"
        "========= ERROR SUMMARY: 2 errors\n"
    )
    report = sanitizer.parse(text, "memcheck")
    (r,) = report["accesses"]
    assert (r["file"], r["line"], r["kernel"], r.get("misaligned")) == ("/src/k.py", 17, "_k", True)
    assert report["other"] == ["Something this parser does not know"]
    assert sanitizer.parse("", "memcheck") == {"tool": "memcheck", "errors": None, "accesses": []}


def test_a_race_from_the_sanitizer_fails_the_check_and_is_ranked_first():
    report = CheckReport("pitfall_race", "cuda", "gpu", [CaseResult("regular", [4096], "float32",
                                                                    "contiguous")])  # fmt: skip
    assert report.correct
    report.sanitizer = sanitizer.parse(sample("racecheck_race"), "racecheck", [RACE_FILE])
    assert not report.correct and report.summary()["verdict"] == "races on shared memory"
    again = CheckReport.from_dict(report.to_dict())
    assert again.sanitizer == report.sanitizer
    first = diagnose(Facts(kernel="pitfall_race", check=again)).findings[0]
    assert (first.id, first.severity, first.line) == ("smem-race", "high", 41)
    assert "bar.sync" in first.fix and "line 41" in first.fix
    # a racing kernel also differs from run to run (as on the H200): that is the race's doing
    again.cases[0].deterministic = False
    found = diagnose(Facts(kernel="pitfall_race", check=again)).findings
    assert found[0].id == "smem-race" and "reduction-across-blocks" not in [f.id for f in found]
    assert "reduction-across-blocks" in [f["id"] for f in found[0].evidence["folded"]]


def test_the_command_wraps_the_worker_with_the_caching_allocator_off():
    cmd = sanitizer.command("/cuda/bin/compute-sanitizer", "memcheck", ["_a_kernel", "_b"])
    assert cmd[:3] == ["env", "PYTORCH_NO_CUDA_MEMORY_CACHING=1", "/cuda/bin/compute-sanitizer"]
    assert cmd[cmd.index("--tool") + 1] == "memcheck"
    assert cmd[cmd.index("--log-file") + 1] == "{run_dir}/sanitizer.log"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--kernel-name"] == [
        "kns=_a_kernel",
        "kns=_b",
    ]
    assert "--padding" in cmd
    race = sanitizer.command("cs", "racecheck", ["_k"])
    assert "--racecheck-report" in race and "--padding" not in race and "kns=_k" in race
    assert "--kernel-name" not in sanitizer.command("cs", "initcheck", ["_k"])
    with pytest.raises(WorkbenchError, match="no tool 'leakcheck'"):
        sanitizer.command("cs", "leakcheck", [])


def _executable(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'Version 2025.1.0'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_it_is_found_on_path_then_cuda_home_then_the_newest_cuda_install(tmp_path):
    root = tmp_path / "local"
    for version in ("12.4", "12.10", "11.8"):
        _executable(root / f"cuda-{version}" / "bin" / "compute-sanitizer")
    env = {"PATH": str(tmp_path / "nothing")}
    found = sanitizer.find(env, root)
    assert found.path == str(root / "cuda-12.10" / "bin" / "compute-sanitizer")
    assert found.version == "2025.1.0"
    _executable(tmp_path / "home" / "bin" / "compute-sanitizer")
    home = sanitizer.find({**env, "CUDA_HOME": str(tmp_path / "home")}, root)
    assert home.path == str(tmp_path / "home" / "bin" / "compute-sanitizer")
    _executable(tmp_path / "bin" / "compute-sanitizer")
    on_path = sanitizer.find({"PATH": str(tmp_path / "bin")}, root)
    assert on_path.path == str(tmp_path / "bin" / "compute-sanitizer")


def test_missing_it_says_every_place_it_looked_and_how_to_get_it(tmp_path):
    env = {"PATH": str(tmp_path), "CUDA_HOME": str(tmp_path / "cuda-home")}
    with pytest.raises(WorkbenchError) as exc:
        sanitizer.find(env, tmp_path / "local")
    problem = exc.value.problem
    assert problem.kind == "tool-missing" and problem.source == "environment"
    assert str(tmp_path / "cuda-home" / "bin" / "compute-sanitizer") in problem.cause
    assert str(tmp_path / "local" / "cuda" / "bin" / "compute-sanitizer") in problem.cause
    assert sanitizer.ENV in problem.remedy
    bad = {sanitizer.ENV: str(tmp_path / "nope")}
    with pytest.raises(WorkbenchError, match="not an executable file"):
        sanitizer.find(bad)


def test_check_sanitize_on_a_host_without_a_gpu_is_refused_before_any_job(tmp_path):
    proc = cli("check", "vector_add", "--sanitize", "memcheck", env=cpu_env(tmp_path))
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stderr and "remedy:" in proc.stderr
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


PLANTED = {  # kernel -> (kinds, the lines' jit function and text): as the GPU test finds them
    # memcheck stops the kernel at its first fault: the load one past the end, before the store
    "pitfall_off_by_one": ({"read"}, ("_scale_le_kernel", "tl.load(x_ptr")),
    "pitfall_oob_write": ({"write"}, ("_pair_sum_input_mask_kernel", "tl.store(")),
    "pitfall_oob_read": ({"read"}, ("_diff_unshifted_mask_kernel", "+ 1,")),
    "pitfall_uninit": ({"uninitialised-read"}, ("_axpy_kernel", "tl.load(y_ptr")),
    "pitfall_race": ({"race"}, ("_reverse_racy_kernel", "inline_asm_elementwise")),
}
CAPTURES = sorted(p for p in SAMPLES.glob("*_pitfall_*.txt") if not p.name.startswith("SAMPLE"))
"""Real logs from the GPU host (`benchmarks/sanitizer_capture.sh`), named TOOL_KERNEL.txt."""


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_real_captures_are_read_into_the_planted_accesses(capture: Path):
    tool, kernel = capture.stem.split("_", 1)
    flawed = kernel.removesuffix("_fixed")
    file = ROOT / "kernels" / "pitfalls" / f"{flawed}.py"
    report = sanitizer.parse(capture.read_text(), tool, [str(file)])
    assert "other" not in report, report["other"]
    if kernel.endswith("_fixed") or tool == "synccheck":
        assert report["accesses"] == [] and report["errors"] == 0, report  # its summary read
        return
    kinds, where = PLANTED[flawed]
    assert kinds <= {r["kind"] for r in report["accesses"]}, report
    if where is not None:
        lines = file.read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(f"def {where[0]}("))
        line = next(i for i in range(start, len(lines)) if where[1] in lines[i]) + 1
        assert {r["line"] for r in report["accesses"]} == {line}, report
