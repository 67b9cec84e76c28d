"""The attention's warp-specialized Gluon path on the H100 itself: taken for the inputs it fits,
launched as `attn_fwd_ws`, as close to SDPA as the `tl` kernel is on the same inputs; a ragged
sequence takes the `tl` kernel. `python -m pytest -m gpu tests/gpu/test_attention_ws_gpu.py`."""

from __future__ import annotations

import pytest
import torch

from kernels import attention as A
from workbench.ir.capture import Launch, intercepted
from workbench.runtime import compat

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
        reason="an sm_90 GPU",
    ),
    pytest.mark.skipif(not compat.gluon_hopper_ws(), reason="Triton 3.6+'s Gluon"),
]


def _launched(q: torch.Tensor, causal: bool) -> list[str]:
    launches: list[Launch] = []
    with intercepted(launches, None):
        A.attention(q, q, q, causal)
    return [launch.name for launch in launches]


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_gluon_kernel_is_as_close_to_sdpa_as_the_tl_kernel(d, causal, dtype):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 1024, d, device="cuda", dtype=dtype) for _ in "qkv")
    assert A._ws_ok(q, k, v) and _launched(q, causal) == ["attn_fwd_ws"]
    exact = A._reference(q.double(), k.double(), v.double(), causal)
    ours = (A.attention(q, k, v, causal).double() - exact).abs().max().item()
    saved = A._ws_ok
    try:
        A._ws_ok = lambda *_: False
        tl_err = (A.attention(q, k, v, causal).double() - exact).abs().max().item()
    finally:
        A._ws_ok = saved
    sdpa = (A._reference(q, k, v, causal).double() - exact).abs().max().item()
    assert ours <= 2 * max(tl_err, sdpa), (ours, tl_err, sdpa)


def test_a_ragged_sequence_takes_the_tl_kernel():
    q = torch.randn(1, 2, 1000, 64, device="cuda", dtype=torch.float16)
    assert not A._ws_ok(q, q, q)
    assert set(_launched(q, True)) == {"_attn_fwd"}  # one launch recorded per config tried


@pytest.mark.parametrize("consumers", [2, 3])
@pytest.mark.parametrize("seq", [512, 640, 1024])
@pytest.mark.parametrize("causal", [False, True])
def test_each_consumer_count_writes_every_row_of_every_head_once(consumers, seq, causal):
    """Three consumers take 192-row tiles: at 512 and 640 the last tile of each head holds two
    and one consumers' rows, the others release their blocks without computing. A row left
    unwritten stays NaN; a store past a head overwrites the next head's first rows."""
    from kernels import _attention_ws as ws

    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, seq, 64, device="cuda", dtype=torch.float16) for _ in "qkv")
    o = torch.full_like(q, float("nan"))
    ws.attention(q, k, v, o, causal, consumers=consumers)
    exact = A._reference(q.double(), k.double(), v.double(), causal)
    sdpa = (A._reference(q, k, v, causal).double() - exact).abs().max().item()
    assert not o.isnan().any()
    assert (o.double() - exact).abs().max().item() <= 2 * sdpa
