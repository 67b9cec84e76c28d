"""The pitfall kernels of kernels/pitfalls/: each flawed kernel beside its fixed twin.

Every pitfall and twin is discovered from source. The check (the check job as the worker runs
it in the Triton interpreter, in two child processes that split the kernels between them) fails
each flawed kernel exactly where its pitfall says and passes every twin and every flawed kernel
whose pitfall is speed, not correctness. The pitfalls that live in the compiled code (the bf16
running sum, the fp32 atomic add) show in TTIR cross-compiled for sm_90. On a GPU host (`-m
gpu`), the same checks and the launch facts of the launch-bound pair run on the GPU.
"""

from __future__ import annotations

import math
import re

import pytest
from conftest import ROOT, interpreter_checks

from workbench.catalog.discovery import discover
from workbench.catalog.loader import load_spec
from workbench.check.result import CaseResult, CheckReport
from workbench.run import jobs
from workbench.run.kinds import job_params

PITFALLS = ROOT / "kernels" / "pitfalls"
TWIN = {
    "pitfall_tail": "pitfall_tail_fixed",
    "pitfall_stride": "pitfall_stride_fixed",
    "pitfall_bf16_acc": "pitfall_bf16_acc_fixed",
    "pitfall_atomics": "pitfall_atomics_fixed",
    "pitfall_bank_conflicts": "pitfall_bank_conflicts_fixed",
    "pitfall_launch_bound": "pitfall_launch_bound_fixed",
    "pitfall_dropout_rng": "pitfall_dropout_rng_fixed",
    "pitfall_dropout_scale": "pitfall_dropout_rng_fixed",
    "pitfall_wide_rows": "pitfall_wide_rows_fixed",
    "pitfall_small_grid": "pitfall_small_grid_fixed",
}
TWINS = sorted(set(TWIN.values()))
SPEED_ONLY = (
    "pitfall_atomics",
    "pitfall_bank_conflicts",
    "pitfall_launch_bound",
    "pitfall_small_grid",
)
"""Flawed kernels whose pitfall costs speed (or run-to-run bits): their outputs are right."""
WRONG = ("pitfall_tail", "pitfall_stride", "pitfall_dropout_rng", "pitfall_dropout_scale")
WRONG += ("pitfall_wide_rows",)
GPU_ONLY = ("pitfall_bf16_acc", "pitfall_bf16_acc_fixed")
"""bf16 only: the interpreter skips every case."""
MIN_STOCHASTIC = 1000
"""Outputs smaller than this may keep and drop alike on both streams by chance."""


@pytest.fixture(scope="module")
def reports() -> dict[str, CheckReport]:
    names = sorted((set(TWINS) | set(SPEED_ONLY) | set(WRONG)) - set(GPU_ONLY))
    catalog = discover([str(PITFALLS)])
    todo = [(PITFALLS, n, {"dtypes": _float32(catalog.find(n).dtypes)}) for n in names]
    found = interpreter_checks(todo[0::2], todo[1::2])
    return {name: CheckReport.from_dict(d) for name, d in found.items()}


def _float32(dtypes: tuple[str, ...] | None) -> list[str] | None:
    """float32 alone where the kernel takes it (one dtype shows the pitfall), else its own."""
    return ["float32"] if dtypes and "float32" in dtypes else None


def _ran(report: CheckReport) -> list[CaseResult]:
    return [c for c in report.cases if c.status != "skipped"]


def _numel(case: CaseResult) -> int:
    return math.prod(case.shape)


def test_every_pitfall_and_its_twin_are_discovered_from_source():
    catalog = discover([str(PITFALLS)])
    assert not catalog.problems, catalog.problems
    entries = {k.name: k for k in catalog.kernels}
    for flawed, twin in TWIN.items():
        assert flawed in entries and twin in entries, (flawed, twin)
        assert entries[flawed].file == entries[twin].file, "a pitfall sits beside its twin"
        for name in (flawed, twin):
            entry = entries[name]
            assert entry.shapes and "bench" in entry.shapes and entry.description, name
            assert entry.dtypes is not None, f"{name}: dtypes not literal"
    # Found by the default search too: kernels/ holds the pitfalls folder.
    assert set(TWIN) <= {k.name for k in discover([str(ROOT / "kernels")]).kernels}


@pytest.mark.parametrize("name", sorted(set(TWINS) - set(GPU_ONLY)) + list(SPEED_ONLY))
def test_twins_and_speed_pitfalls_pass_the_check(reports, name):
    report = reports[name]
    ran = _ran(report)
    wrong = [(c.shape, c.layout, c.reason) for c in ran if c.status != "passed"]
    assert ran and report.correct, wrong
    assert {c.layout for c in ran} == {"contiguous", "strided"}
    assert all(c.deterministic for c in ran if c.layout == "contiguous")  # the interpreter


def test_missing_tail_fails_only_at_irregular_sizes_with_the_tail_unwritten(reports):
    ran = _ran(reports["pitfall_tail"])
    failed = [c for c in ran if c.status == "failed"]
    assert {c.shape_set for c in failed} == {"irregular"}
    assert all(c.status == "passed" for c in ran if c.shape_set == "regular")
    assert len(failed) == len([c for c in ran if c.shape_set == "irregular"])
    block = 1024  # pitfall_tail.BLOCK: the floor grid leaves n % BLOCK elements unwritten
    assert all(c.unwritten == _numel(c) % block and c.boundary_only for c in failed)
    assert reports["pitfall_tail"].summary()["boundary_only_errors"]


def test_ignored_strides_fail_only_on_strided_inputs(reports):
    report = reports["pitfall_stride"]
    ran = _ran(report)
    assert all(c.status == "passed" for c in ran if c.layout == "contiguous")
    strided = [c for c in ran if c.layout == "strided"]
    # A 1 x 1 view reads its one element at offset 0 whatever the strides.
    assert all(c.status == "failed" for c in strided if _numel(c) > 1)
    assert report.summary()["stride_only_errors"]


def test_dropout_on_another_stream_mismatches_element_by_element_only(reports):
    cases = [c for c in _ran(reports["pitfall_dropout_rng"]) if _numel(c) >= MIN_STOCHASTIC]
    assert cases
    for c in cases:
        assert c.bad > 0, "kernel and torch dropped the very same elements"
        # Failed element by element, or passed as the same distribution on another stream.
        fact = getattr(c, "stochastic", None)
        assert c.status == "failed" or (fact and fact["rate_ok"] and fact["scale_ok"]), c.reason


def test_dropout_scaled_by_1_over_p_fails(reports):
    cases = [c for c in _ran(reports["pitfall_dropout_scale"]) if _numel(c) >= MIN_STOCHASTIC]
    assert cases and all(c.status == "failed" for c in cases)
    for c in cases:
        fact = getattr(c, "stochastic", None)
        if fact:  # kept values are (1 / p) / (1 / (1 - p)) = 9 times torch's at p = 0.1
            assert not fact["scale_ok"] and fact["scale"] == pytest.approx(9.0, rel=1e-3)


def test_rows_wider_than_the_block_fail_past_the_block(reports):
    ran = _ran(reports["pitfall_wide_rows"])
    block = 1024  # pitfall_wide_rows.BLOCK
    for c in ran:
        cols = c.shape[-1]
        if cols <= block:
            assert c.status == "passed", (c.shape, c.reason)
        else:
            assert c.status == "failed"
            assert c.unwritten == _numel(c) // cols * (cols - block), (c.shape, c.unwritten)
    assert {c.shape_set for c in ran if c.status == "failed"} == {"regular", "irregular"}


def _ttir(name: str, dtype: str) -> list[str]:
    """TTIR of each kernel `name` launches on its first check shape, compiled for sm_90."""
    from workbench.ir.capture import capture
    from workbench.runtime import compat

    spec = load_spec(discover([str(PITFALLS)]).find(name))
    launches = capture(spec, "cpu", dtype)
    return [compat.cross_compile(x.fn, 90, x.args, x.kwargs).asm["ttir"] for x in launches]


@pytest.mark.versions
def test_bf16_running_sum_shows_in_ttir():
    (ttir,) = _ttir("pitfall_bf16_acc", "bfloat16")
    tile = r"tensor<64x64x(?P<t>\w+)>"
    loop = re.search(r"scf\.for .* -> \((.*)\)", ttir)
    assert loop and "tensor<64x64xbf16>" in loop.group(1), "no loop-carried bf16 tile"
    assert re.search(rf"tt\.dot .*-> {tile}", ttir).group("t") == "f32"  # Triton's dot: fp32
    assert re.search(rf"arith\.truncf \S+ : {tile} to tensor<64x64xbf16>", ttir)
    assert re.search(r"arith\.addf \S+, \S+ : tensor<64x64xbf16>", ttir)
    (fixed,) = _ttir("pitfall_bf16_acc_fixed", "bfloat16")
    assert "tt.dot" in fixed and not re.search(r"arith\.addf [^\n]*xbf16>", fixed)
    assert "tensor<64x64xbf16>" not in re.search(r"scf\.for .* -> \((.*)\)", fixed).group(1)


@pytest.mark.versions
def test_atomic_add_across_programs_shows_in_ttir():
    (ttir,) = _ttir("pitfall_atomics", "float32")
    assert re.search(r"tt\.atomic_rmw fadd, \w+, \w+, [^:]*: \(!tt\.ptr<f32>, f32", ttir)
    fixed = _ttir("pitfall_atomics_fixed", "float32")
    assert len(fixed) == 2 and not any("tt.atomic_rmw" in t for t in fixed)


# ---- on the GPU host (-m gpu) ------------------------------------------------------------------


def _gpu_job(kind: str, name: str, params: dict) -> dict:
    entry = discover([str(PITFALLS)]).find(name)
    out = jobs.run_job(jobs.Job(kind, entry, job_params(kind, params), timeout=600))
    assert out.status == "ok", (out.problem, out.log[-2000:])
    return out.result


@pytest.mark.gpu
def test_on_the_gpu_bf16_error_grows_with_k_past_the_bound():
    flawed = CheckReport.from_dict(_gpu_job("check", "pitfall_bf16_acc", {}))
    regular = sorted((c for c in flawed.cases if c.shape_set == "regular"), key=lambda c: c.shape)
    contiguous = [c for c in regular if c.layout == "contiguous"]
    errors = [c.rel_l2 for c in contiguous]
    assert errors == sorted(errors) and errors[-1] > 2 * errors[0]
    assert contiguous[0].status == "passed" and contiguous[-1].status == "failed"
    assert CheckReport.from_dict(_gpu_job("check", "pitfall_bf16_acc_fixed", {})).correct


@pytest.mark.gpu
def test_on_the_gpu_atomics_change_bits_between_runs_and_the_twin_does_not():
    flawed = CheckReport.from_dict(_gpu_job("check", "pitfall_atomics", {"dtypes": ["float32"]}))
    assert flawed.correct and flawed.summary()["nondeterministic"]
    fixed = CheckReport.from_dict(
        _gpu_job("check", "pitfall_atomics_fixed", {"dtypes": ["float32"]})
    )
    assert fixed.correct and not fixed.summary()["nondeterministic"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", [*WRONG, *TWINS])
def test_on_the_gpu_checks_agree_with_the_interpreter(name):
    report = CheckReport.from_dict(_gpu_job("check", name, {}))
    assert report.correct == (name in TWINS or name == "pitfall_dropout_rng" and _stochastic())
    if name == "pitfall_tail":
        assert {c.shape_set for c in report.cases if c.status == "failed"} == {"irregular"}
    if name == "pitfall_stride":
        assert report.summary()["stride_only_errors"]


def _stochastic() -> bool:
    """Whether the check weighs dropout-like mismatches as another random stream."""
    return "stochastic" in CaseResult.__dataclass_fields__


@pytest.mark.gpu
def test_on_the_gpu_the_op_by_op_mlp_is_launch_bound_and_the_fused_one_is_not():
    params = {"shapes": [[8, 512]], "compile": False, "launches": True}
    flawed = _gpu_job("bench", "pitfall_launch_bound", params)["records"][0]["launch"]
    fused = _gpu_job("bench", "pitfall_launch_bound_fixed", params)["records"][0]["launch"]
    assert flawed["launches"] == 36 and fused["launches"] == 1
    assert flawed["graph_correct"] and flawed["graph_ms"] < flawed["eager_ms"] / 2
    assert fused["eager_ms"] < flawed["eager_ms"] / 5
