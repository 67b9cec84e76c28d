"""The facts `check` records and the verdict they add up to.

Hand-made outputs test the comparison (NaN payloads, another random stream) and the report's
facts; flawed kernels (tests/fixtures/check_facts, tests/helpers), one wrong in each way, run
through the check job's own run_check on Triton's interpreter and must get the verdict that
names it.
"""

from __future__ import annotations

import math
import types

import pytest
import torch
from conftest import FIXTURES, ROOT, cli, compare_spec, cpu_env, interpreter_checks

from workbench.catalog import loader
from workbench.check import verdict
from workbench.check.compare import compare
from workbench.check.result import CaseResult, CheckReport
from workbench.cli import check as check_cli
from workbench.run import jobs
from workbench.run.params import CheckParams
from workbench.runtime import tensors
from workbench.runtime.errors import WorkbenchError
from workbench.views.rows import check_verdict

FLAWED = FIXTURES / "check_facts"
BROKEN = ROOT / "tests" / "helpers" / "broken_kernels.py"
F32 = ["float32"]
# kernel -> (path, run_check's dtypes and shape sets), in two groups of about equal time
GROUPS = (
    {
        "dropout_own_rng": (FLAWED, {"dtypes": F32}),
        "dropout_unscaled": (FLAWED, {"dtypes": F32, "shape_sets": ["regular"]}),
        "dropout_keeps_p": (FLAWED, {"dtypes": F32, "shape_sets": ["regular"]}),
        "softmax_no_max": (FLAWED, {"dtypes": F32}),
        "softmax_no_max_rows": (FLAWED, {}),
        "mean_over_block": (FLAWED, {"dtypes": F32}),
        "copy_ignores_strides": (FLAWED, {"dtypes": ["float32", "float16"]}),
    },
    {
        "sum_fp16_acc": (FLAWED, {"dtypes": F32}),
        "tail_three_name": (FLAWED / "tail_three_name.py", {}),
        "hardcoded_three_name": (FLAWED / "hardcoded_three_name.py", {}),
        "scale_ignores_strides": (BROKEN, {"dtypes": ["float32", "float16"]}),
        "gelu_dropout": (ROOT / "kernels", {"dtypes": F32, "shape_sets": ["irregular"]}),
    },
)


@pytest.fixture(scope="module")
def reports() -> dict[str, CheckReport]:
    parts = [[(path, name, params) for name, (path, params) in g.items()] for g in GROUPS]
    return {name: CheckReport.from_dict(d) for name, d in interpreter_checks(*parts).items()}


# ---- NaN payloads -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_each_payload_is_a_nan_that_reads_back_in_every_dtype(dtype):
    for payload in (tensors.UNWRITTEN, tensors.PADDING):
        t = tensors.fill_nan(torch.empty(5, dtype=dtype)[::2], payload)  # strided, too
        assert torch.isnan(t).all()
        assert tensors.nan_payload(t).tolist() == [payload] * 3
    assert tensors.nan_payload(torch.tensor([float("nan")], dtype=dtype)).item() not in (
        tensors.UNWRITTEN,
        tensors.PADDING,
    )


def test_poisoned_allocations_and_strided_copies_carry_different_payloads():
    with tensors.poisoned_allocations():
        fresh = torch.empty(4, 3)
    x = tensors.strided_copy(torch.randn(4, 3))
    assert (tensors.nan_payload(fresh) == tensors.UNWRITTEN).all()
    gaps = x.as_strided((4, 3), (6, 2), storage_offset=1)
    assert torch.isnan(gaps).all() and (tensors.nan_payload(gaps) == tensors.PADDING).all()
    assert not torch.isnan(x).any()


def _compare(out: torch.Tensor, ref: torch.Tensor) -> CaseResult:
    case = CaseResult("check", list(ref.shape), "float32", "contiguous")
    compare(compare_spec(), case, [out], [ref], "float32")
    return case


def test_nan_and_inf_are_sorted_by_where_they_came_from():
    ref = torch.randn(100)
    out = ref.clone()
    tensors.fill_nan(out[:3], tensors.UNWRITTEN)
    tensors.fill_nan(out[10:15], tensors.PADDING)
    out[20:22] = float("nan")  # made by the kernel: the canonical NaN
    out[30] = float("inf")
    case = _compare(out, ref)
    assert (case.unwritten, case.read_padding, case.nonfinite) == (3, 5, 3)
    assert case.status == "failed" and case.bad == 11
    assert "not written" in case.reason and "padding" in case.reason and "NaN/Inf" in case.reason


def test_nan_where_the_reference_has_nan_is_no_fault():
    ref = torch.tensor([float("nan"), 1.0, float("inf")])
    out = ref.clone()
    tensors.fill_nan(out[:1], tensors.UNWRITTEN)
    case = _compare(out, ref)
    assert case.status == "passed" and (case.unwritten, case.nonfinite) == (0, 0)


# ---- another random stream --------------------------------------------------------------------


def _dropout(x: torch.Tensor, keep: float, scale: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    kept = torch.rand(x.shape, generator=g) < keep
    return torch.where(kept, x * scale, 0.0)


def test_another_stream_of_the_same_dropout_passes_with_its_keep_rates():
    x = torch.randn(20_000)
    case = _compare(_dropout(x, 0.9, 1 / 0.9, seed=1), _dropout(x, 0.9, 1 / 0.9, seed=2))
    assert case.status == "passed" and case.bad > 0
    fact = case.stochastic
    assert fact["scale_ok"] and fact["rate_ok"]
    assert abs(fact["keep_rate"] - 0.9) < 0.01 and abs(fact["ref_keep_rate"] - 0.9) < 0.01
    assert case.reason.startswith("same distribution, different RNG stream")


def test_the_same_stream_is_a_plain_pass():
    x = torch.randn(5000)
    case = _compare(_dropout(x, 0.9, 1 / 0.9, seed=1), _dropout(x, 0.9, 1 / 0.9, seed=1))
    assert case.status == "passed" and case.stochastic is None and case.reason == ""


def test_a_wrong_scale_or_keep_rate_still_fails_with_that_reason():
    x = torch.randn(20_000)
    ref = _dropout(x, 0.9, 1 / 0.9, seed=2)
    unscaled = _compare(_dropout(x, 0.9, 1.0, seed=1), ref)
    assert unscaled.status == "failed" and not unscaled.stochastic["scale_ok"]
    assert unscaled.stochastic["scale"] == pytest.approx(0.9, rel=1e-5)
    assert "0.9x the reference's" in unscaled.reason
    rate = _compare(_dropout(x, 0.8, 1 / 0.9, seed=1), ref)
    assert rate.status == "failed" and rate.stochastic["scale_ok"]
    assert not rate.stochastic["rate_ok"] and "keep rate off" in rate.reason


def test_zeros_only_added_are_a_bug_not_a_stream():
    x = torch.randn(4, 1000)
    ref = torch.relu(x)  # zeros of its own, half the elements
    out = ref.clone()
    out[:, 500:] = 0.0  # the kernel zeroes a region: zeros added, none lost
    case = _compare(out, ref)
    assert case.status == "failed" and case.stochastic is None


def test_kept_values_off_by_more_than_a_factor_are_not_a_stream():
    x = torch.randn(20_000)
    out = _dropout(x, 0.9, 1 / 0.9, seed=1)
    out[out != 0] += torch.randn(int((out != 0).sum())) * 0.1
    case = _compare(out, _dropout(x, 0.9, 1 / 0.9, seed=2))
    assert case.status == "failed" and case.stochastic is None


# ---- report-level facts and the verdict -------------------------------------------------------


def _case(shape, status="passed", dtype="float32", layout="contiguous", **kw) -> CaseResult:
    return CaseResult("k", list(shape), dtype, layout, status=status, **kw)


def test_error_growing_with_one_dimension_is_a_trend():
    cases = [
        _case((64, 16), rel_l2=2e-5),
        _case((64, 128), rel_l2=5e-5),
        _case((64, 2048), "failed", rel_l2=3e-4),
        _case((64, 2048), "failed", layout="strided", rel_l2=9.0),  # strided: not counted
        _case((32, 4096), rel_l2=1.0),  # differs in two dimensions: no group
    ]
    s = CheckReport("k", "cpu", "interpreter", cases).summary()
    assert s["error_trend"] == {"dim": 1, "sizes": [16, 128, 2048], "rel_l2": [2e-5, 5e-5, 3e-4]}
    assert s["verdict"] == verdict.TREND
    flat = [_case((64, n), rel_l2=1e-5 * (1 + n / 2048)) for n in (16, 128, 2048)]
    assert verdict.error_trend(flat) is None  # 2x across 128x: rounding, no trend
    short = [_case((64, 16), rel_l2=1e-5), _case((64, 64), rel_l2=1e-3)]
    assert verdict.error_trend(short) is None  # a 4x span is too short to tell
    # fp16 element-wise: exact at one element, the reference's own rounding beyond: no trend
    rounding = [
        _case((n,), dtype="float16", rel_l2=e, ref_rel_l2=e)
        for n, e in ((1, 0.0), (1000, 2.2e-4), (98431, 2.3e-4))
    ]
    assert verdict.error_trend(rounding) is None
    # a running sum in low precision outgrows a reference that rounds once
    running = [
        _case((64, k), dtype="bfloat16", rel_l2=e, ref_rel_l2=2e-3)
        for k, e in ((256, 4.4e-3), (4096, 1.5e-2), (32768, 3.8e-2))
    ]
    assert verdict.error_trend(running)["sizes"] == [256, 4096, 32768]


def test_run_to_run_differences_make_the_verdict_even_when_within_tolerance():
    cases = [_case((1024,), deterministic=False), _case((1000,), deterministic=True)]
    report = CheckReport("k", "cpu", "gpu", cases)
    s = report.summary()
    assert report.correct and s["nondeterministic"] and s["verdict"] == verdict.NONDETERMINISTIC
    assert "two-pass" in s["fix"]
    stream = {"keep_rate": 0.9, "ref_keep_rate": 0.9, "scale_ok": True, "rate_ok": True}
    drawn = [_case((1024,), deterministic=False, stochastic=stream)]
    s = CheckReport("k", "cpu", "gpu", drawn).summary()
    assert not s["nondeterministic"] and s["verdict"] == verdict.STREAM


def test_a_report_stored_before_these_facts_reads_back_with_them():
    old_case = {
        "shape_set": "irregular",
        "shape": [1000],
        "dtype": "float32",
        "layout": "contiguous",
        "status": "failed",
        "unwritten": 8,
        "bad": 8,
        "numel": 1000,
        "boundary_only": True,
        "boundary_block": 16,
    }
    regular = {**old_case, "shape_set": "regular", "shape": [1024], "status": "passed"}
    stored = {"kernel": "k", "device": "cpu", "mode": "interpreter", "cases": [regular, old_case]}
    report = CheckReport.from_dict(stored)
    assert report.cases[1].read_padding == 0 and report.cases[1].stochastic is None
    s = report.to_dict()["summary"]
    assert s["verdict"] == verdict.TAIL and s["irregular_only_errors"] and not s["stochastic"]
    assert s["error_trend"] is None


# ---- three-name modules: derived irregular shapes ------------------------------------------


def _three_name(get_inputs) -> types.SimpleNamespace:
    module = types.SimpleNamespace(
        get_inputs=get_inputs,
        kernel_fn=lambda a, b, k: a @ b * k,
        reference_fn=lambda a, b, k: a @ b * k,
        __doc__="matmul",
        __file__="m.py",
    )
    return module


def test_derived_shapes_shrink_shared_sizes_together_and_keep_the_rest():
    module = _three_name(lambda: [torch.randn(64, 32, device="cuda"), torch.randn(32, 3), 2.0])
    spec = loader.three_name_spec(module, "mm")
    assert loader.derived_shapes(spec, "cpu") == [(49, 25)]
    a, b, k = spec.make_inputs((49, 25), None, "cpu")
    assert a.shape == (49, 25) and b.shape == (25, 3) and k == 2.0
    assert a.is_contiguous() and b.is_contiguous()
    with pytest.raises(WorkbenchError) as err:
        spec.make_inputs((49,), None, "cpu")
    assert "one size per" in err.value.problem.remedy
    plain = _three_name(lambda: [torch.randn(3, 5), torch.randn(5, 7), 1.0])
    assert loader.derived_shapes(loader.three_name_spec(plain, "small"), "cpu") == []


# ---- flawed kernels on the interpreter ---------------------------------------------------------


@pytest.mark.parametrize("name", ["copy_ignores_strides", "scale_ignores_strides"])
def test_payloads_survive_the_interpreter_and_name_ignored_strides(reports, name):
    report = reports[name]
    strided = [c for c in report.cases if c.layout == "strided"]
    assert {c.dtype for c in strided} == {"float32", "float16"}
    for c in strided:  # every other element read from the gaps, copied or times 2.0
        assert c.status == "failed" and c.read_padding == c.numel // 2, c
        assert c.unwritten == 0 and c.nonfinite == 0
    s = report.summary()
    assert s["verdict"] == verdict.STRIDES and s["stride_only_errors"]
    assert ".contiguous()" in s["fix"]


def test_another_rng_stream_passes_and_a_wrong_scale_or_rate_fails(reports):
    own = reports["dropout_own_rng"]
    assert own.correct and own.summary()["verdict"] == verdict.STREAM
    big = [c for c in own.cases if c.numel >= 1000]
    assert big and all(c.stochastic and c.stochastic["rate_ok"] for c in big)
    assert not own.summary()["nondeterministic"]  # a fresh seed per call is no race
    assert any(c.deterministic is False for c in own.cases)
    unscaled = reports["dropout_unscaled"]
    assert not unscaled.correct and unscaled.summary()["verdict"] == verdict.SCALE
    scales = [c.stochastic["scale"] for c in unscaled.cases if c.stochastic]
    assert scales and all(s == pytest.approx(0.75, rel=1e-4) for s in scales)
    keeps_p = reports["dropout_keeps_p"]
    assert not keeps_p.correct and keeps_p.summary()["verdict"] == verdict.KEEP_RATE


def test_the_shipped_dropout_reproduces_its_reference_stream(reports):
    report = reports["gelu_dropout"]
    assert report.summary()["verdict"] == verdict.CORRECT
    assert all(c.status == "passed" and c.stochastic is None for c in report.cases)


def test_overflow_is_nan_produced_not_unwritten(reports):
    report = reports["softmax_no_max"]
    failed = [c for c in report.cases if c.status == "failed"]
    assert failed and all(c.nonfinite > 0 and c.unwritten == 0 for c in failed)
    assert report.summary()["verdict"] == verdict.NONFINITE


def test_wrong_only_at_irregular_shapes(reports):
    s = reports["mean_over_block"].summary()
    assert s["irregular_only_errors"] and not s["boundary_only_errors"]
    assert s["verdict"] == verdict.IRREGULAR


def test_set_names_decide_what_is_irregular_where_the_kernel_names_its_sets():
    wide = CaseResult("wide", [4, 4096], "float32", "contiguous", status="failed")
    regular = CaseResult("regular", [4, 256], "float32", "contiguous")
    irregular = CaseResult("irregular", [3, 100], "float32", "contiguous", status="failed")
    assert verdict.irregular_only([regular, irregular])
    assert not verdict.irregular_only([regular, irregular, wide])  # "wide" is neither
    unnamed = [_case((4096,)), _case((1000,), "failed"), _case((64, 48), "failed")]
    assert not verdict.irregular_only(unnamed)  # 64 x 48: every size a multiple of 16
    assert verdict.irregular_only(unnamed[:2])


def test_low_precision_accumulation_shows_as_an_error_trend(reports):
    s = reports["sum_fp16_acc"].summary()
    assert s["error_trend"]["dim"] == 1 and s["error_trend"]["sizes"] == [16, 256, 4096]
    first, *_, last = s["error_trend"]["rel_l2"]
    assert last > 4 * first
    assert s["verdict"] == verdict.TREND


def test_three_name_tail_is_found_at_a_derived_irregular_shape(reports):
    report = reports["tail_three_name"]
    by_set = {(c.shape_set, c.layout): c for c in report.cases}
    assert by_set[("check", "contiguous")].status == "passed"  # 4096 = 16 x 256
    derived = by_set[(loader.DERIVED, "contiguous")]
    assert derived.shape == [4096 * 3 // 4 + 1] and derived.status == "failed"
    assert derived.unwritten == 1 and derived.boundary_only
    assert [c.shape_set for c in report.cases][-1] == loader.DERIVED  # derived cases last
    assert verdict.DERIVED == loader.DERIVED and all(verdict.derived(c) for c in [derived])
    s = report.summary()
    assert s["verdict"] == verdict.TAIL and s["irregular_only_errors"]


def test_three_name_hard_coded_sizes_are_skipped_not_failed(reports):
    report = reports["hardcoded_three_name"]
    derived = [c for c in report.cases if c.shape_set == loader.DERIVED]
    assert derived and all(c.status == "skipped" and c.problem is None for c in derived)
    assert all("hard-code" in c.reason and "[64, 64]" in c.reason for c in derived)
    assert report.correct and report.summary()["verdict"] == verdict.CORRECT


def test_the_verdict_lines_name_the_verdict_its_fix_and_the_facts(reports):
    lines = check_verdict(reports["tail_three_name"]).splitlines()
    assert lines[0] == "tail_three_name on its given inputs: CORRECT (1 passed; interpreter mode)"
    assert lines[1] == (
        "tail_three_name on derived inputs (irregular sizes cut from get_inputs() and strided "
        "copies): NOT CORRECT: tail not covered (missing mask) (1 passed, 2 failed)"
    )
    assert lines[2].startswith("  fix: mask every tl.load")
    assert "  fact: errors only at shapes that are not multiples of the block" in lines
    assert (
        "  fact: the grid launches n // BLOCK programs (BLOCK=256): the partial tile has none"
        in (lines)
    )
    assert any(
        line.startswith("  rule: kernel error against the reference on float64") for line in lines
    )
    trend = check_verdict(reports["sum_fp16_acc"])
    assert "grows with dimension 1" in trend and math.isfinite(
        reports["sum_fp16_acc"].summary()["error_trend"]["rel_l2"][-1]
    )
    first = check_verdict(reports["gelu_dropout"]).splitlines()[0]
    assert first.startswith("gelu_dropout on its given inputs: CORRECT (")


def _exit_status(report: CheckReport, capsys: pytest.CaptureFixture) -> int:
    """What `check` exits with for this result (its JSON printed and dropped)."""
    outcome = jobs.Outcome(
        jobs.Job("check", None, CheckParams()), "run", "dir", result=report.to_dict()
    )
    status = check_cli.report(outcome, True)
    capsys.readouterr()
    return status


def test_the_headline_names_the_given_inputs_cause_before_the_derived_ones(reports, capsys):
    """A softmax without the row max overflows on its own inputs; its strided copies also leave
    rows unwritten (rows counted from the stride). The overflow leads, then the derived cause."""
    report = reports["softmax_no_max_rows"]
    s = report.summary()
    assert s["given"]["verdict"] == verdict.NONFINITE and s["given"]["failed"] == 2
    assert s["derived"]["verdict"] == verdict.UNWRITTEN and s["derived"]["failed"] == 2
    assert s["verdict"] == verdict.NONFINITE and "subtract the row max" in s["fix"]
    first, second = check_verdict(report).splitlines()[:2]
    assert first.startswith(
        "softmax_no_max_rows on its given inputs: NOT CORRECT: NaN/Inf produced"
    )
    assert second.startswith(
        "softmax_no_max_rows on derived inputs (strided copies): NOT CORRECT: outputs not written"
    )
    assert _exit_status(report, capsys) == check_cli.EXIT_WRONG == 1


def test_exit_status_tells_wrong_on_derived_inputs_from_wrong_on_given_ones(reports, capsys):
    assert _exit_status(reports["tail_three_name"], capsys) == check_cli.EXIT_WRONG_DERIVED == 4
    assert reports["tail_three_name"].given_correct and not reports["tail_three_name"].correct
    assert _exit_status(reports["scale_ignores_strides"], capsys) == 4
    assert _exit_status(reports["mean_over_block"], capsys) == 1  # its own irregular shapes
    assert _exit_status(reports["gelu_dropout"], capsys) == check_cli.EXIT_CORRECT == 0


def test_the_tail_names_the_launched_block_and_the_grid_that_floors_the_size(reports):
    report = reports["tail_three_name"]
    derived = [c for c in report.cases if c.shape_set == loader.DERIVED]
    assert derived and all(c.launches[0]["grid"] == [3073 // 256] for c in derived)
    assert all(c.launches[0]["constexprs"] == {"BLOCK": 256} for c in derived)
    assert derived[0].boundary_blocks == [16, 32, 64, 128, 256, 512, 1024, 2048]
    assert "a 256-wide block (BLOCK=256)" in derived[0].reason
    tail = report.summary()["tail"]
    assert (tail["block"], tail["name"], tail["floors"]) == (256, "BLOCK", True)
    masked = CaseResult(
        "derived",
        [3073],
        "float32",
        "contiguous",
        status="failed",
        boundary_only=True,
        boundary_blocks=[16, 32, 64, 128, 256, 512, 1024, 2048],
        launches=[{"kernel": "k", "grid": [13], "constexprs": {"BLOCK": 256, "N": 7}}],
    )
    assert verdict.tail([masked])["floors"] is False  # cdiv(3073, 256) programs: a mask's tail
    masked.launches = []
    assert verdict.tail_words([masked]) == "a block 16 to 2048 wide"


def test_a_plain_autotuned_module_checks_in_the_interpreter_on_its_first_config(tmp_path):
    """Triton's autotuner benchmarks its configs with do_bench, which needs a GPU: a plain
    three-name module with a 3-config @triton.autotune raised "0 active drivers" on a CPU host,
    blamed on the user's line. The interpreter runs the first config alone, and says so."""
    module = FIXTURES / "sweep_three_name.py"
    out = cli("check", "sweep_three_name", "--path", str(module), env=cpu_env(tmp_path))
    assert "active drivers" not in out.stdout + out.stderr
    assert "sweep_three_name on its given inputs: CORRECT" in out.stdout, out.stdout
    assert "note: interpreter: _scale: BLOCK: 256" in out.stdout and "untimed" in out.stdout
