"""Tool output -> Problem, on output captured from ncu 2025.3.1 and nsys on the H100 host."""

from __future__ import annotations

from pathlib import Path

from workbench.profilers.toolerrors import (
    Filters,
    available_kernels,
    classify,
    report_problem,
    timeout_problem,
)

FIXTURES = Path(__file__).parent / "fixtures"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_counter_permission():
    # The H100 host allows counters (RmProfilingAdminOnly: 0), so this line is ncu's message as
    # reported publicly (deepseek-ai/DeepGEMM#46).
    text = (
        "==PROF== Connected to process 9012 (/usr/bin/python3)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0. For instructions on enabling permissions "
        "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
        "==WARNING== No kernels were profiled.\n"
    )
    p = classify(text, "ncu")
    assert p.kind == "counters-permission"  # not "no kernels": the cause comes first
    assert "CAP_SYS_ADMIN" in p.remedy and "NVreg_RestrictProfilingToAdminUsers=0" in p.remedy


def test_no_kernels_with_nvtx_filter_names_the_filter():
    f = Filters(("workbench@nothing/",))
    p = classify(_text("ncu_err_no_kernels_nvtx.txt"), "ncu", f, ["_add_kernel"])
    assert p.kind == "no-kernels-profiled"
    assert "NVTX include workbench@nothing/" in p.cause
    assert "the spec's Triton kernels: _add_kernel" in p.cause


def test_no_kernels_lists_what_ran():
    text = _text("ncu_err_profile_no_kernels.log")  # the workbench's own run, wrong jit= name
    assert available_kernels(text) == ["_add_kernel"]
    f = Filters(("workbench@wrong_filter:4096:float32/",), "regex:^(_never_launched)(_|$)", 1)
    p = classify(text, "ncu", f, ["_never_launched"])
    assert p.kind == "no-kernels-profiled"
    assert "kernel name regex:^(_never_launched)(_|$)" in p.cause
    assert "kernels that ran: _add_kernel" in p.cause
    by_name = _text("ncu_err_no_kernels_name.txt")
    assert available_kernels(by_name) == ["reduce_kernel", "vectorized_elementwise_kernel"]


def test_derived_metric_aborts_the_target():
    p = classify(_text("ncu_err_derived_metric.txt"), "ncu")
    assert p.kind == "unknown-metric"
    assert "'derived__local_spilling_requests'" in p.cause
    assert "sections" in p.remedy


def test_unknown_plain_metric_is_not_a_failure_in_this_ncu():
    # ncu 2025.3.1 prints "(!) n/a" for an unknown name and profiles the rest: nothing to report.
    assert classify(_text("ncu_err_unknown_metric.txt"), "ncu") is None


def test_nsys_importer_without_libdw():
    p = classify(_text("nsys_err_libdw.txt"), "nsys")
    assert p.kind == "nsys-importer"
    assert "libdw" in p.cause and "LD_LIBRARY_PATH" in p.remedy


def test_truncated_report_messages():
    p = classify(_text("ncu_err_truncated.txt"), "ncu")
    assert p.kind == "tool-error" and "Failed to load report file" in p.cause
    n = classify(_text("nsys_err_truncated.txt"), "nsys")
    assert n.kind == "corrupt-report" and "magic number mismatch" in n.cause
    assert "truncated" in n.remedy
    r = report_problem("x.ncu-rep", "it holds no profiled kernel")
    assert r.kind == "corrupt-report" and r.file == "x.ncu-rep"


def test_clean_runs_classify_as_nothing():
    log = _text("ncu_err_unknown_metric.txt").split("[")[0]
    assert classify(log, "ncu") is None
    assert classify("==PROF== Report: /x/profile.ncu-rep\n", "ncu") is None


def test_timeout_names_the_tool_and_the_ways_out():
    p = timeout_problem("ncu", 900, 4)
    assert p.kind == "timeout" and "900 s" in p.cause and "4 kernel launch" in p.cause
    assert "--timeout" in p.remedy and "--launch-count" in p.remedy
