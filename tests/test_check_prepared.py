"""The prepared comparison (`check.compare.Reference`: the reference side measured once, each
output judged in one pass) against the one-shot comparison it replaced (tests/helpers), on many
random cases: every CaseResult field must be the same, bit for bit."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
import torch
from conftest import compare_spec
from helpers import oneshot_compare

from workbench.catalog.spec import Tolerance
from workbench.check import compare as comparison
from workbench.check.exact import Yardstick
from workbench.check.result import CaseResult
from workbench.runtime import tensors

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTEGRAL = [torch.int32, torch.int64, torch.bool]
CASES = 120
MAX_NUMEL = 1500
"""Small enough for chunks of 7 elements to be quick."""


def _shape(rng: random.Random) -> tuple[int, ...]:
    """0 to 3 dimensions, sizes around powers of two, at most MAX_NUMEL elements."""
    shape = [rng.choice([1, 3, 17, 40, 70]) for _ in range(rng.randint(0, 3))]
    while math.prod(shape) > MAX_NUMEL:
        shape.pop()
    return tuple(shape)


def _reference(rng: random.Random, shape: tuple[int, ...], dtype: torch.dtype) -> tuple:
    """(the reference at `dtype`, its float64 run): special values now and then."""
    if dtype in INTEGRAL:
        r = torch.randint(0, 2 if dtype == torch.bool else 50, shape).to(dtype)
        return r, r.double()
    scale = rng.choice([0.0, 1e-3, 1.0, 300.0])
    wide = torch.randn(shape, dtype=torch.float64) * scale
    if wide.numel() and rng.random() < 0.2:
        flat = wide.view(-1)
        flat[rng.randrange(flat.numel())] = rng.choice([math.inf, -math.inf, math.nan])
    return wide.to(dtype), wide


def _kernel(rng: random.Random, r: torch.Tensor, wide: torch.Tensor) -> torch.Tensor:
    """An output for reference `r`: right, rounded otherwise, off somewhere, poisoned, or
    another random stream."""
    kind = rng.choice(["same", "rounded", "off", "tail", "poison", "inf", "stream", "far"])
    r = r.contiguous()
    if not r.is_floating_point():
        o = r.clone()
        if o.numel() and kind != "same":
            o.view(-1)[rng.randrange(o.numel())] ^= True if o.dtype == torch.bool else 1
        return o
    eps = torch.finfo(r.dtype).eps
    o = (wide * (1 + eps * torch.randn_like(wide))).to(r.dtype) if kind != "same" else r.clone()
    flat = o.view(-1)
    if not flat.numel():
        return o
    if kind == "off":
        for _ in range(rng.randint(1, 4)):
            flat[rng.randrange(flat.numel())] += rng.choice([1e-2, 1.0, 1e3])
    elif kind == "tail" and o.dim():
        o[..., -rng.randint(1, 3) :] = 7.0
    elif kind == "poison":
        payload = rng.choice([tensors.UNWRITTEN, tensors.PADDING])
        start = rng.randrange(flat.numel())
        tensors.fill_nan(flat[start : start + rng.randint(1, 20)], payload)
    elif kind == "inf":
        flat[rng.randrange(flat.numel())] = rng.choice([math.inf, math.nan])
    elif kind == "stream":  # both sides drop about half, each its own half
        keep = torch.rand(o.shape) < 0.5
        o = torch.where(keep, wide * 2, 0.0).to(r.dtype)
    elif kind == "far":
        o = (wide * 1.05).to(r.dtype)
    return o


def _layout(rng: random.Random, t: torch.Tensor) -> torch.Tensor:
    """`t`, or now and then the same values in a column-major (non-contiguous) layout."""
    return t.mT.contiguous().mT if t.dim() >= 2 and rng.random() < 0.3 else t


def _wider(rng: random.Random, r: torch.Tensor, wide: torch.Tensor) -> torch.Tensor | None:
    """The wider run of the reference: float64, float32, another function's, another shape's,
    or none."""
    kind = rng.choice(["float64", "float64", "float32", "other", "shape", "none"])
    if kind == "float64":
        return wide
    if kind == "float32":
        return wide.float()
    if kind == "other":
        return wide * 3 + 1
    if kind == "shape":
        return wide.reshape(-1)[:-1] if wide.numel() else None
    return None


def _case(rng: random.Random) -> tuple:
    """(spec, outputs, references, dtype name, yardstick) of one random case; one to three
    outputs, the first floating-point where a spec tolerance is stated for its dtype."""
    dtype = rng.choice(FLOATS + INTEGRAL[:1])
    refs, wides, widers = [], [], []
    for n in range(rng.choice([1, 1, 2, 3])):
        shape = _shape(rng)
        t = dtype if n == 0 else rng.choice(FLOATS + INTEGRAL)
        r, wide = _reference(rng, shape, t)
        refs.append(_layout(rng, r))
        wides.append(wide)
        widers.append(_wider(rng, r, wide))
    name = tensors.dtype_name(dtype)
    stated = {name: Tolerance(atol=1e-3, rtol=1e-2, rel_l2=1e-2)} if rng.random() < 0.3 else None
    outputs = widers if all(w is not None for w in widers) else None
    yardstick = Yardstick(outputs, "float64", "" if outputs else "the reference raised")
    if rng.random() < 0.15:
        yardstick = None
    return compare_spec(stated), refs, wides, rng.choice([name, None]), yardstick


def _same(a: CaseResult, b: CaseResult) -> list[str]:
    """The fields that differ (NaN equal to NaN)."""
    differ = []
    for f in dataclasses.fields(CaseResult):
        x, y = getattr(a, f.name), getattr(b, f.name)
        both_nan = isinstance(x, float) and isinstance(y, float) and x != x and y != y
        if not (x == y or both_nan) or type(x) is not type(y):
            differ.append(f"{f.name}: {x!r} != {y!r}")
    return differ


@pytest.mark.parametrize("chunk", [comparison.CHUNK, 64, 7])
def test_prepared_reference_judges_as_the_one_shot_comparison(monkeypatch, chunk):
    """Each random case judged three ways: the one-shot comparison, `compare`, and one prepared
    Reference judging several outputs in turn (as the sweep does, one per config)."""
    for module in (comparison, oneshot_compare):
        monkeypatch.setattr(module, "CHUNK", chunk)
    rng = random.Random(chunk)
    torch.manual_seed(chunk)
    seen: set[tuple] = set()
    for n in range(CASES):
        spec, refs, wides, dtype, yardstick = _case(rng)
        reference = comparison.Reference(spec, refs, dtype, yardstick)
        for _ in range(3):
            out = [_layout(rng, _kernel(rng, r, w)) for r, w in zip(refs, wides)]
            cases = [CaseResult("check", list(refs[0].shape), "x", "contiguous") for _ in range(3)]
            oneshot_compare.compare(spec, cases[0], out, refs, dtype, yardstick)
            comparison.compare(spec, cases[1], out, refs, dtype, yardstick)
            reference.judge(cases[2], out)
            for case in cases[1:]:
                assert not _same(cases[0], case), (n, _same(cases[0], case))
            old = cases[0]
            seen.add((old.rule, old.against, old.status))
            seen.add(("poison", bool(old.unwritten), bool(old.read_padding), bool(old.nonfinite)))
            seen.add(("tail", old.boundary_only, old.stochastic is not None))
    # the random cases reached every rule, yardstick and verdict the comparison has
    for rule in ("calibrated", "stated", "exact"):
        assert {(rule, "", "passed"), (rule, "", "failed")} <= seen, rule
    assert {("calibrated", "float64", "failed"), ("calibrated", "float32", "passed")} <= seen
    assert {("poison", True, False, False), ("poison", False, True, False)} <= seen
    assert ("poison", False, False, True) in seen
    assert {("tail", True, False), ("tail", False, True)} <= seen


def test_a_prepared_reference_refuses_outputs_of_another_structure():
    reference = comparison.Reference(compare_spec(), [torch.zeros(4)], "float32")
    case = CaseResult("check", [4], "float32", "contiguous")
    with pytest.raises(comparison.WorkbenchError, match="shape"):
        reference.judge(case, [torch.zeros(5)])
    with pytest.raises(comparison.WorkbenchError, match="returned 2 tensors"):
        reference.judge(case, [torch.zeros(4), torch.zeros(4)])
