"""The dropout stream pinned to its written definition, and the accuracy of the erf GELU.

The stream is recomputed here from scratch: Philox4x32-10 in numpy (checked against the
published Random123 known-answer vectors), counters and 16-bit halves as `kernels._dropout`
defines them. The kernels run in one interpreter subprocess (TRITON_INTERPRET=1 must be set
before triton is imported), which prints what it computed as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import ROOT

pytestmark = pytest.mark.versions  # CI runs these under every Triton release

SEED = (7 << 33) + 12345  # both 32-bit halves of the key are non-zero
MASKS = [(3, 21, 0.5), (2, 3000, 0.3), (1, 5, 0.5), (4, 16, 1e-4), (2, 40, 0.999)]

_CODE = """
import json, math, torch
import torch.nn.functional as F
from workbench.runtime import compat
compat.fix_interpreter()  # what the worker does (Triton < 3.7, numpy >= 2.4)
from kernels import _dropout as D, gelu as G, norms as N
seed = torch.tensor([SEED])
out = {"masks": [D.keep_mask(seed, r, c, p).int().tolist() for r, c, p in MASKS]}
out["thresholds"] = [D.threshold(p) for p in (0.0, 0.5, 1e-4, 2**-18, 0.99999)]
big = D.keep_mask(seed, 8, 6000, 0.5)
out["rate_half"] = big.float().mean().item()
out["rate_tiny"] = D.keep_mask(seed, 8, 6000, 1e-4).float().mean().item()
out["rows_are_one_row"] = torch.equal(
    D.keep_mask(seed, 2, 8, 0.5).flatten(), D.keep_mask(seed, 1, 16, 0.5)[0]
)
out["prefix"] = torch.equal(D.keep_mask(seed, 2, 5, 0.5)[1], D.keep_mask(seed, 2, 8, 0.5)[1, :5])
# the chunked path of the fused kernel (rows wider than MAX_FUSED_COLS) on the same stream
x = torch.rand(2, N.MAX_FUSED_COLS + 3001) + 0.5
w, b = torch.ones(x.shape[1]), torch.zeros(x.shape[1])
_, h = N.add_dropout_layer_norm(x, torch.zeros_like(x), w, b, 0.25, seed)
out["chunked_ln_mask"] = torch.equal(h != 0, D.keep_mask(seed, *x.shape, 0.25))

x = torch.linspace(-12, 12, 200001)
ref = F.gelu(x.double())
err = (G.gelu(x).double() - ref).abs()
big = ref.abs() > 1e-3
out["gelu_rel"] = (err[big] / ref[big].abs()).max().item()
out["gelu_abs"] = err[~big].max().item()
special = torch.tensor([1e4, -1e4, math.inf, -math.inf, math.nan, 0.0, -0.0])
out["special"] = [str(v) for v in G.gelu(special).tolist()]
out["special_ref"] = [str(v) for v in F.gelu(special.double()).tolist()]
print(json.dumps(out))
"""

_M = np.uint64(0xFFFFFFFF)


def _philox(c: list[np.ndarray], k0: int, k1: int) -> list[np.ndarray]:
    """Philox4x32-10 on uint64 arrays holding 32-bit words (products of two fit in 64 bits)."""
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _M, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _M]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & _M, (k1 + np.uint64(0xBB67AE85)) & _M
    return c


def _expected_mask(seed: int, rows: int, cols: int, p: float) -> np.ndarray:
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    counter = (r * -(-cols // 8) + c // 8).astype(np.uint64)
    zero = np.zeros_like(counter)
    words = _philox(
        [counter & _M, counter >> np.uint64(32), zero, zero], seed & 0xFFFFFFFF, seed >> 32
    )
    word = np.choose((c % 8) // 2, words)
    value = (word >> (16 * (c % 2)).astype(np.uint64)) & np.uint64(0xFFFF)
    return value >= min(round(p * 65536), 65535)


@pytest.fixture(scope="module")
def computed() -> dict:
    code = f"SEED, MASKS = {SEED}, {MASKS!r}\n" + textwrap.dedent(_CODE)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_numpy_philox_matches_the_published_known_answers():
    def words(c: list[int], k: list[int]) -> list[int]:
        return [int(w[0]) for w in _philox([np.array([v], np.uint64) for v in c], *k)]

    assert words([0] * 4, [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert words([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2) == [
        0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD,
    ]  # fmt: skip
    assert words([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1,
    ]  # fmt: skip


def test_keep_mask_is_the_documented_stream(computed):
    for (rows, cols, p), got in zip(MASKS, computed["masks"]):
        expected = _expected_mask(SEED, rows, cols, p)
        assert np.array_equal(np.array(got, bool), expected), (rows, cols, p)
    assert computed["rows_are_one_row"] and computed["prefix"]
    assert computed["chunked_ln_mask"]


def test_threshold_is_sixteen_bits(computed):
    assert computed["thresholds"] == [0, 32768, 7, 0, 65535]
    assert abs(computed["rate_half"] - 0.5) < 5 * (0.25 / 48000) ** 0.5
    # p = 1e-4 drops values 0..6 of 65536: about 5 of 48000 elements
    assert 1 - 30 / 48000 < computed["rate_tiny"] < 1


def test_erf_gelu_accuracy_against_float64(computed):
    assert computed["gelu_rel"] < 3e-6  # where |GELU(x)| > 1e-3 (about 1.5e-6 measured)
    assert computed["gelu_abs"] < 1e-7  # elsewhere, the tails included
    assert computed["special"] == computed["special_ref"]  # inf, -inf -> nan, nan, -0.0
