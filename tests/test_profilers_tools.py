"""Finding ncu and nsys, and the command lines built around the workbench's NVTX ranges."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from workbench.profilers import names, ncu, nsys, tools
from workbench.profilers.launch import PLACEHOLDER, substitute
from workbench.runtime.errors import WorkbenchError
from workbench.runtime.grammar import parse_case

FIXTURES = Path(__file__).parent / "fixtures"


def _program(path: Path, version_line: str) -> Path:
    """A small executable that answers --version the way the real tool does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'NVIDIA tool'\necho '{version_line}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": str(tmp_path / "empty-bin"), **extra}


def test_override_wins_and_reports_version(tmp_path):
    prog = _program(tmp_path / "x" / "my-ncu", "Version 2025.3.1.0 (build 36398880)")
    tools.version.cache_clear()
    tool = tools.find("ncu", _env(tmp_path, WORKBENCH_NCU=str(prog)), opt_root=tmp_path / "opt")
    assert tool.path == str(prog)
    assert tool.origin == "WORKBENCH_NCU"
    assert tool.version == "2025.3.1.0 (build 36398880)"


def test_override_that_is_not_a_program_is_refused(tmp_path):
    env = _env(tmp_path, WORKBENCH_NSYS=str(tmp_path / "nope"))
    with pytest.raises(WorkbenchError) as err:
        tools.find("nsys", env, opt_root=tmp_path / "opt")
    assert err.value.problem.kind == "tool-missing"
    assert "WORKBENCH_NSYS" in err.value.problem.cause


def test_nsys_inside_newest_nsight_compute_folder(tmp_path):
    opt = tmp_path / "opt"
    _program(opt / "nsight-compute" / "2024.1.0" / "host" / "target-linux-x64" / "nsys", "v1")
    newest = _program(
        opt / "nsight-compute" / "2025.3.1" / "host" / "target-linux-x64" / "nsys",
        "NVIDIA Nsight Systems version 2025.3.1.90-253135822160v0",
    )
    _program(opt / "nsight-compute" / "2025.3.1" / "ncu", "Version 2025.3.1.0")
    tools.version.cache_clear()
    tool = tools.find("nsys", _env(tmp_path), opt_root=opt)
    assert tool.path == str(newest)
    assert tool.version == "2025.3.1.90-253135822160v0"
    assert tools.find("ncu", _env(tmp_path), opt_root=opt).origin.endswith("2025.3.1")


def test_path_and_cuda_home_come_before_install_folders(tmp_path):
    bin_dir = tmp_path / "bin"
    on_path = _program(bin_dir / "ncu", "Version 1")
    cuda = _program(tmp_path / "cuda" / "bin" / "ncu", "Version 2")
    env = {"PATH": str(bin_dir), "CUDA_HOME": str(tmp_path / "cuda")}
    found = tools.candidates("ncu", env, opt_root=tmp_path / "opt")
    assert found[:2] == [(str(on_path), "PATH"), (str(cuda), "CUDA_HOME")]


def test_missing_tool_says_what_and_how(tmp_path):
    with pytest.raises(WorkbenchError) as err:
        tools.find("ncu", _env(tmp_path), opt_root=tmp_path / "opt")
    p = err.value.problem
    assert p.kind == "tool-missing"
    assert "Nsight Compute" in p.cause and "PATH" in p.cause
    assert "WORKBENCH_NCU" in p.remedy and "install" in p.remedy


def test_real_version_strings():
    lines = (FIXTURES / "ncu_versions.txt").read_text().splitlines()
    assert (
        tools.parse_version("\n".join(lines[:3])) == "2025.3.1.0 (build 36398880) (public-release)"
    )
    assert tools.parse_version(lines[3]) == "2025.3.1.0"  # "NVIDIA Nsight Systems version …"


def test_nvtx_filter_escapes_and_trailing_slash():
    cfg = names.Config((4096, 1024), "float16")
    rng = names.range_name("softmax", cfg)
    assert rng == "softmax:4096x1024:float16"
    assert names.nvtx_include(rng) == "workbench@softmax:4096x1024:float16/"
    assert names.nvtx_escape("a/b@c,d[e]*+") == r"a\/b\@c\,d\[e\]\*\+"
    assert names.Config(*parse_case("1000,7:float32", None)) == names.Config((1000, 7), "float32")
    assert names.Config(*parse_case("268435456", "float16")).label == "268435456:float16"
    assert parse_case("inputs", "float16") == ((), "float16")
    with pytest.raises(WorkbenchError) as info:
        parse_case("big", None)
    assert info.value.problem.kind == "bad-shape" and "--case" in info.value.problem.remedy


def test_kernel_names_from_source(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\n"
        "from workbench.catalog.spec import KernelSpec\n"
        "@triton.jit\n"
        "def _inner(x):\n    pass\n"
        "tuned = triton.autotune(configs=[], key=[])(_inner)\n"
        "@triton.jit\n"
        "def _other(x):\n    pass\n"
        "S = KernelSpec(name='a', kernel_fn=None, reference_fn=None, make_inputs=None,\n"
        "               shapes={}, jit=(tuned, _other))\n"
        "T = KernelSpec(name='b', kernel_fn=None, reference_fn=None, make_inputs=None,\n"
        "               shapes={})\n"
    )
    assert names.jit_kernel_names(str(src), "a") == ["_inner", "_other"]
    assert names.jit_kernel_names(str(src), "b") == []
    # a kernel imported from a sibling module, named once for several specs
    pitfall = ROOT / "kernels" / "pitfalls" / "pitfall_spill.py"
    assert names.jit_kernel_names(str(pitfall), "pitfall_spill_fixed") == ["_matmul_kernel"]
    assert names.kernel_regex(["_inner", "_other"]) == "regex:^(_inner|_other)(_|$)"


def test_a_kernel_listed_only_where_the_installed_triton_has_it_is_named_all_the_same():
    """ncu's name filter is read from the source, before anything imports: a `jit=` entry behind
    `*((mod.k,) if cond else ())` is named whichever arm runs. On the H100 the filter missed the
    attention's Gluon kernel (added by a function call) and ncu profiled nothing."""
    attention = ROOT / "kernels" / "attention.py"
    assert names.jit_kernel_names(str(attention), "attention") == [
        "_attn_fwd",
        "_attn_fwd_tma",
        "attn_fwd_ws",
    ]


def test_ncu_command_filters_to_the_range_and_kernel():
    p = ncu.plan(
        "/opt/ncu",
        "quick",
        ["vector_add:4096:float32"],
        ["_add_kernel"],
        ["lts__t_bytes.sum"],
        launch_count=1,
        known={"lts__t_bytes"} | {ncu.base_name(m) for m in ncu.PRESETS["quick"].metrics},
    )
    cmd = p.command()
    assert cmd[:4] == ["/opt/ncu", "--nvtx", "--nvtx-include", "workbench@vector_add:4096:float32/"]
    assert cmd[cmd.index("-k") + 1] == "regex:^(_add_kernel)(_|$)"
    assert cmd[cmd.index("--launch-count") + 1] == "1"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == [
        "LaunchStats",
        "Occupancy",
        "SpeedOfLight",
        "SourceCounters",
    ]
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum" in metrics
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" in metrics
    assert (
        "dram__bytes_read.sum" in metrics and "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in metrics
    )
    assert metrics[-1] == "lts__t_bytes.sum"
    assert cmd[cmd.index("--import-source") + 1] == "yes"
    assert cmd[cmd.index("--clock-control") + 1] == "none"  # never touch the GPU's clocks
    assert cmd[-1] == f"{PLACEHOLDER}/profile"
    full = ncu.plan("ncu", "full", ["r"], [], [], None, None).command()
    assert full[full.index("--set") + 1] == "full" and "-k" not in full


def test_unknown_metric_is_refused_before_running():
    known = {"dram__bytes_read", "gpu__time_duration"}
    with pytest.raises(WorkbenchError) as err:
        ncu.plan("ncu", "quick", ["r"], [], ["dram__bytes_raed.sum"], None, known)
    assert err.value.problem.kind == "unknown-metric"
    assert "dram__bytes_read" in err.value.problem.remedy  # the close match
    with pytest.raises(WorkbenchError) as err:
        ncu.check_metric_name("derived__local_spilling_requests", None)
    assert "section" in err.value.problem.cause
    p = ncu.plan("ncu", "quick", ["r"], [], [], None, {"gpu__time_duration"})
    assert p.metrics == [] and len(p.dropped) == len(ncu.PRESETS["quick"].metrics)


def test_query_metrics_listing_parses():
    source = ncu.parse_query_metrics((FIXTURES / "ncu_query_source.txt").read_text())
    launch = ncu.parse_query_metrics((FIXTURES / "ncu_query_launch.txt").read_text())
    assert {"inst_executed", "smsp__pcsamp_sample_count"} <= source
    assert {"launch__grid_size", "launch__registers_per_thread"} <= launch
    assert not any(" " in n or n.startswith("-") for n in source | launch)


def test_nsys_command_and_placeholder():
    cmd = nsys.command("/x/nsys")
    assert cmd[:4] == ["/x/nsys", "profile", "-t", "cuda,nvtx"]
    assert "--sample=none" in cmd and "--cpuctxsw=none" in cmd
    child = ["python", "-m", "workbench.run.worker", "k", "--run-dir", "/runs/7"]
    assert substitute(cmd + child)[cmd.index("-o") + 1] == "/runs/7/profile"


def test_launcher_passes_events_and_tool_lines(tmp_path):
    """The launcher runs the wrapped command and mirrors its non-JSON lines as events."""
    import json
    import subprocess

    script = 'print("==PROF== Profiling k"); print(\'{"event": "x"}\')'
    out = subprocess.run(
        [sys.executable, "-m", "workbench.profilers.launch", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
        check=True,
    ).stdout.splitlines()
    assert out[0] == "==PROF== Profiling k"
    assert json.loads(out[1]) == {"event": "tool", "line": "==PROF== Profiling k"}
    assert json.loads(out[2]) == {"event": "x"}
