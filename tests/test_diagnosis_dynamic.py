"""Dynamic findings: each flawed pitfall kernel's real CPU facts (the check in the interpreter,
the cross-compile, the neighbours; tests/fixtures/diagnosis/facts_cpu_*.json, gathered by the
diagnose loop with --gpu-facts none) rank its pitfall first, its fixed twin raises nothing above
info; the rest is made here with the check's own comparison on computed outputs."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
import triton
import triton.language as tl
from conftest import FIXTURES, PITFALL_FINDINGS, compare_spec
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec
from workbench.check.compare import compare
from workbench.check.result import CaseResult, CheckReport
from workbench.diagnosis import Facts, diagnose
from workbench.diagnosis.static import ir_findings
from workbench.ir.linemap import map_mlir
from workbench.runtime import tensors

DIAG = FIXTURES / "diagnosis"
MEASURED_ON_A_GPU = ("pitfall_bank_conflicts", "pitfall_launch_bound", "pitfall_small_grid")
"""Pitfalls that only a GPU's measurements show (Nsight Compute, launch facts): no CPU facts."""
FLAWED = {n: first for n, first in PITFALL_FINDINGS.items() if n not in MEASURED_ON_A_GPU}


def cpu_facts(name: str) -> Facts:
    return Facts.from_dict(json.loads((DIAG / f"facts_cpu_{name}.json").read_text()))


@pytest.mark.parametrize("name", sorted(FLAWED))
def test_each_flawed_kernel_has_its_pitfall_first(name: str):
    d = diagnose(cpu_facts(name))
    assert d.findings and d.findings[0].id == FLAWED[name], [(f.severity, f.id) for f in d.findings]
    assert d.findings[0].severity != "info"


TWINS = [f"{n}_fixed" for n in sorted(FLAWED) if n != "pitfall_dropout_scale"]


LIBRARY = ["vector_add", "softmax", "layer_norm", "gelu"]


@pytest.mark.parametrize("name", [*TWINS, "pitfall_dropout_rng", *LIBRARY])
def test_fixed_twins_and_library_kernels_raise_nothing_above_info(name: str):
    d = diagnose(cpu_facts(name))
    assert [(f.id, f.title) for f in d.findings if f.severity != "info"] == []


def test_the_tail_finding_says_what_the_check_saw():
    (tail,) = diagnose(cpu_facts("pitfall_tail")).findings
    assert tail.severity == "high" and "last, partial tile" in tail.title
    assert tail.evidence["unwritten"] > 0 and tail.evidence["boundary_block"] == 1024
    assert "mask=" in tail.fix


def test_strides_ignored_are_told_from_unwritten_outputs():
    (stride,) = diagnose(cpu_facts("pitfall_stride")).findings
    assert "assumes contiguous inputs" in stride.title and "not written" not in stride.title
    assert stride.evidence["contiguous_passed"] == 5 and stride.evidence["cases"] == 4
    assert "stride" in stride.fix and ".contiguous()" in stride.fix


def test_rng_stream_is_info_and_a_wrong_scale_is_not():
    (stream,) = diagnose(cpu_facts("pitfall_dropout_rng")).findings
    assert (stream.id, stream.severity) == ("rng-stream", "info")
    assert stream.title.startswith("same distribution, different RNG stream: keep rate 0.")
    scale = diagnose(cpu_facts("pitfall_dropout_scale")).findings[0]
    assert "scaled wrongly" in scale.title and "scale 9" in scale.title
    assert "not x / p" in scale.fix


def test_wide_rows_name_the_widths():
    wide = diagnose(cpu_facts("pitfall_wide_rows")).findings[0]
    assert (wide.evidence["widest_passing"], wide.evidence["narrowest_failing"]) == (1024, 3000)
    assert "no-boundary-mask" not in [
        f.id for f in diagnose(cpu_facts("pitfall_wide_rows")).findings
    ]


def test_atomics_static_alone_is_medium_and_joins_the_measured_nondeterminism():
    """In the interpreter two runs agree (it runs programs in order); on a GPU they differ, as
    the same facts with one case marked so show: then the check leads, the TTIR line joins."""
    facts = cpu_facts("pitfall_atomics")
    (static,) = diagnose(facts).findings
    assert static.severity == "medium" and static.line == 33  # the tl.atomic_add line
    cases = [
        replace(c, deterministic=False) if i == 0 else c for i, c in enumerate(facts.check.cases)
    ]
    facts.check = CheckReport(facts.kernel, "cuda", "gpu", cases)
    (joined,) = diagnose(facts).findings
    assert joined.severity == "high" and joined.evidence["sources"] == ["check", "static"]
    assert joined.line == 33 and "differ" in joined.title


def _case(
    spec: KernelSpec, out: torch.Tensor, ref: torch.Tensor, dtype: str, shape: list | None = None
) -> CaseResult:
    case = CaseResult("regular", shape or list(out.shape), dtype, "contiguous")
    compare(spec, case, [out], [ref], dtype)
    return case


def test_error_growing_with_k_is_low_precision_accumulation():
    """A bf16 running sum (each K step's fp32 product rounded to bf16, as pitfall_bf16_acc's
    kernel does) against an fp32 one: the check's trend finds it and the finding names it."""

    def check(accumulator: torch.dtype) -> CheckReport:
        torch.manual_seed(0)
        spec, cases = compare_spec(MATMUL_TOLERANCES), []
        for k in (256, 2048, 8192):
            a, b = torch.randn(64, k).bfloat16(), torch.randn(k, 64).bfloat16()
            ref = (a.float() @ b.float()).bfloat16()
            acc = torch.zeros(64, 64, dtype=accumulator)
            for k0 in range(0, k, 32):
                step = a[:, k0 : k0 + 32].float() @ b[k0 : k0 + 32].float()
                acc = (acc.float() + step).to(accumulator)
            cases.append(_case(spec, acc.bfloat16(), ref, "bfloat16", [64, 64, k]))
        return CheckReport("k", "cpu", "interpreter", cases)

    (grows,) = diagnose(Facts("k", check=check(torch.bfloat16))).findings
    assert grows.id == "accumulating-low-precision" and grows.evidence["dim"] == 2
    assert grows.evidence["sizes"] == [256, 2048, 8192] and grows.evidence["growth"] > 4
    assert "fp32" in grows.fix
    assert diagnose(Facts("k", check=check(torch.float32))).findings == []  # rounded once


def test_nan_made_by_the_kernel():
    ref = torch.randn(4, 256, dtype=torch.float16)
    out = ref.clone()
    out[1, 7] = float("inf")  # an overflow, as fp16 gives above 65504
    case = _case(compare_spec(), out, ref, "float16")
    assert case.nonfinite == 1
    (nan,) = diagnose(Facts("k", check=CheckReport("k", "cpu", "x", [case]))).findings
    assert nan.id == "nan-inf" and nan.severity == "high" and "65504" in nan.fix


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits), as tl.dot rounds fp32 inputs by default."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


TF32_DOT = (
    "%d = tt.dot %a, %b, %c, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> "
    "tensor<16x16xf32> loc(#loc1)"
)


def test_tf32_rounding_against_an_ieee_reference():
    torch.manual_seed(0)
    a, b = torch.randn(64, 512), torch.randn(512, 64)
    ref = (a.double() @ b.double()).float()
    case = _case(compare_spec(), _tf32(a) @ _tf32(b), ref, "float32")  # default fp32 tolerances
    assert case.status == "failed" and 1e-4 < case.rel_l2 < 2e-3
    check = CheckReport("k", "cpu", "x", [case])
    (tf32,) = diagnose(Facts("k", check=check)).findings  # no compile facts: the check alone
    assert tf32.id == "tf32-mismatch" and "input_precision='ieee'" in tf32.fix
    # compiled, with no tf32 dot in the TTIR: the errors are not TF32's
    compiled = diagnose(Facts("k", check=check, arch="sm_90")).findings
    assert "tf32-mismatch" not in [f.id for f in compiled]
    static = ir_findings(TF32_DOT, map_mlir(TF32_DOT), "cfg", [])
    (joined,) = diagnose(Facts("k", check=check, arch="sm_90", compile_findings=static)).findings
    assert joined.severity == "medium" and joined.evidence["sources"] == ["check", "static"]


@triton.jit
def _rotate(x_ptr, y_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = (offs - shift) % n
    tl.store(y_ptr + offs, tl.load(x_ptr + src, mask=offs < n), mask=offs < n)


@triton.jit
def _transpose_index(x_ptr, y_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = (offs % 64) * 64 + offs // 64 + shift
    tl.store(y_ptr + offs, tl.load(x_ptr + src, mask=offs < n), mask=offs < n)


def _ttir(fn) -> str:
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "shift": "i32", "BLOCK": "constexpr"}
    target = GPUTarget("cuda", 90, 32)
    return triton.compile(ASTSource(fn, sig, {"BLOCK": 64}), target=target).asm["ttir"]


def test_signed_remainder_of_a_difference_with_wrong_values():
    ttir = _ttir(_rotate)
    static = ir_findings(ttir, map_mlir(ttir), "BLOCK=64", [])
    assert [(f.id, f.severity, f.evidence["op"]) for f in static] == [
        ("c-integer-division", "info", "%")
    ]
    plain = _ttir(_transpose_index)  # // and % of non-negative offsets: nothing to say
    assert ir_findings(plain, map_mlir(plain), "BLOCK=64", []) == []
    # Python's % wraps -1 to n - 1, C's gives -1: the first `shift` outputs come out wrong
    x = torch.arange(100, dtype=torch.float32)
    ref, out = torch.roll(x, 3), x.clone()
    out[:3] = -1.0
    case = _case(compare_spec(), out, ref, "float32")
    facts = Facts("k", check=CheckReport("k", "cpu", "x", [case]), compile_findings=static)
    top = diagnose(facts).findings[0]
    assert (top.id, top.severity) == ("c-integer-division", "high")
    assert top.file.endswith("test_diagnosis_dynamic.py") and "(i % n + n) % n" in top.fix


def _made(
    ref: torch.Tensor, out: torch.Tensor, shape_set: str, layout: str, **facts: object
) -> CaseResult:
    """A case compared as the check compares it, then placed in its set and layout."""
    case = CaseResult(shape_set, list(ref.shape), "float32", layout)
    compare(compare_spec(), case, [out], [ref], "float32")
    for key, value in facts.items():
        setattr(case, key, value)
    return case


def _gpu_nan_every_other(ref: torch.Tensor) -> torch.Tensor:
    """A strided input read as dense on a GPU: every other element comes from the padding and
    its NaN, which the GPU's arithmetic makes canonical (no payload left)."""
    out = ref.clone()
    out[1::2] = float("nan")
    return out


def _unwritten_tail(out: torch.Tensor, n: int) -> torch.Tensor:
    tensors.fill_nan(out[-n:], tensors.UNWRITTEN)
    return out


def test_a_grid_that_floors_the_size_is_a_tail_with_its_fix_and_no_nan_finding():
    """A three-name kernel launching n // 256 programs and reading its input as dense: at the
    size cut from get_inputs() the last element is unwritten; on strided copies the NaN it
    reads from the padding comes out canonical. Two causes, each its finding; no nan-inf."""
    given, cut = torch.randn(4096), torch.randn(3073)
    launch = [{"kernel": "_double", "grid": [12], "constexprs": {"BLOCK": 256}}]
    cases = [
        _made(given, given.clone(), "check", "contiguous"),
        _made(given, _gpu_nan_every_other(given), "check", "strided"),
        _made(cut, _unwritten_tail(cut.clone(), 1), "derived", "contiguous", launches=launch),
        _made(cut, _unwritten_tail(_gpu_nan_every_other(cut), 1), "derived", "strided"),
    ]
    assert cases[1].nonfinite == 2048 and cases[2].boundary_only
    findings = diagnose(Facts("k", check=CheckReport("k", "cuda", "gpu", cases))).findings
    assert sorted(f.id for f in findings) == ["assumes-contiguous", "no-boundary-mask"]
    (tail,) = [f for f in findings if f.id == "no-boundary-mask"]
    assert "BLOCK=256" in tail.title and "the grid launches n // BLOCK programs" in tail.title
    assert tail.evidence["floors"] and tail.evidence["boundary_block"] == 256
    assert "triton.cdiv(n, BLOCK)" in tail.fix and "not n // BLOCK" in tail.fix


def test_nan_that_a_layout_bug_reads_is_its_evidence_not_a_second_finding():
    cases = []
    for n in (64, 128):
        ref = torch.randn(n, 256)
        cases += [
            _made(ref, ref.clone(), "regular", "contiguous"),
            _made(ref, _gpu_nan_every_other(ref.reshape(-1)).view(n, 256), "regular", "strided"),
        ]
    assert all(c.nonfinite for c in cases if c.layout == "strided")
    findings = diagnose(Facts("k", check=CheckReport("k", "cuda", "gpu", cases))).findings
    assert [f.id for f in findings] == ["assumes-contiguous"]


def test_overflow_on_the_given_inputs_ranks_before_a_cause_seen_only_on_derived_ones():
    """A softmax without its row max overflows on its own inputs; its strided copies also leave
    rows unwritten (rows counted from the stride): the overflow first, then the layout."""
    ref = torch.softmax(torch.randn(8, 256), -1)
    overflow = ref.clone()
    overflow[:, :3] = float("nan")
    rows = overflow.clone()
    tensors.fill_nan(rows[4:], tensors.UNWRITTEN)
    cases = [
        _made(ref, overflow, "regular", "contiguous"),
        _made(ref, rows, "regular", "strided"),
    ]
    findings = diagnose(Facts("k", check=CheckReport("k", "cuda", "gpu", cases))).findings
    assert [(f.id, f.evidence["given"]) for f in findings] == [
        ("nan-inf", True),
        ("assumes-contiguous", False),
    ]
    assert findings[0].evidence["nonfinite"] == 24  # the given case's own, not the strided's
    assert "1,024 outputs left unwritten" in findings[1].title


@triton.jit
def _ring(x_ptr, y_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(1, n):  # a pipeline's previous slot: i - 1 is never negative here
        acc += tl.load(x_ptr + ((i - 1) % 4) * BLOCK + offs)
    if n > 0:  # the last slot, where there is one
        acc += tl.load(x_ptr + ((n - 1) % 4) * BLOCK + offs)
    else:
        acc += tl.load(x_ptr + ((n - 1) % 5) * BLOCK + offs)  # -1 when n is 0
    for i in range(0, n):  # -shift first
        acc += tl.load(x_ptr + ((i - shift) % 4) * BLOCK + offs)
    tl.store(y_ptr + offs, acc)


def test_a_difference_known_not_negative_is_no_signed_remainder():
    """`(i - 1) % STAGES` in a loop from 1, or `(n - 1) % STAGES` under `if n > 0`, is how a
    software pipeline names a slot: no finding there; the else branch and a loop from 0 less a
    runtime shift keep theirs."""
    ttir = _ttir(_ring)
    found = ir_findings(ttir, map_mlir(ttir), "BLOCK=64", [])
    flagged = [_ring_line("% 5)"), _ring_line("shift) % 4")]
    assert [(f.id, f.line) for f in found] == [("c-integer-division", n) for n in flagged]


def _ring_line(text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(_ring.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)
