"""A toy decoder-only transformer forward pass built from the library's kernels (a workload).

The model of the "Anatomy of Triton" post: token + position embeddings, then post-LN blocks
x = LN(x + Attn(x)); x = LN(x + FFN(x)), then the vocabulary projection. Here the attention is
causal (a language model) and every block runs on the library:

- Q, K and V from one `matmul` with the three projections side by side, `attention`
  (flash-attention, causal) on strided views of its output, `matmul` for the output projection;
- the FFN's first layer with bias and tanh-GELU fused in the epilogue (`matmul_bias_gelu`), its
  second layer with `matmul`;
- each residual add and LayerNorm in one kernel (`add_dropout_layer_norm`, p = 0 at inference).

Only the embedding gather stays in torch. Each block runs inside an NVTX range `layer<i>` (domain
"workbench"), so a profile splits its kernels by layer. The reference is the same model in torch
(F.linear-style matmuls, scaled_dot_product_attention, F.gelu, F.layer_norm) on the same weights.

Shapes are (batch, seq_len, d_model, n_heads, n_layers); d_ff = 4 d_model, vocabulary VOCAB.
"""

from __future__ import annotations

from dataclasses import dataclass

import nvtx
import torch
import torch.nn.functional as F

from kernels.attention import attention
from kernels.matmul import matmul, matmul_bias_gelu
from kernels.norms import add_dropout_layer_norm
from workbench.catalog.spec import KernelSpec, Tolerance

VOCAB = 1000
NVTX_DOMAIN = "workbench"


@dataclass
class Layer:
    w_qkv: torch.Tensor  # (d, 3d): [W_q | W_k | W_v]
    w_o: torch.Tensor  # (d, d)
    w_1: torch.Tensor  # (d, 4d)
    b_1: torch.Tensor  # (4d,)
    w_2: torch.Tensor  # (4d, d)
    ln1: tuple[torch.Tensor, torch.Tensor]
    ln2: tuple[torch.Tensor, torch.Tensor]


@dataclass
class Model:
    n_heads: int
    token_emb: torch.Tensor  # (VOCAB, d)
    pos_emb: torch.Tensor  # (max_seq, d)
    layers: list[Layer]
    w_out: torch.Tensor  # (d, VOCAB)

    def __repr__(self) -> str:  # keeps run logs short
        d = self.token_emb.shape[1]
        return f"Model(d_model={d}, n_heads={self.n_heads}, n_layers={len(self.layers)})"


def make_model(
    d: int, n_heads: int, n_layers: int, max_seq: int, dtype: torch.dtype, device: str
) -> Model:
    def w(*shape: int, scale: float = 0.02) -> torch.Tensor:
        return (scale * torch.randn(shape, device=device)).to(dtype)

    def ln() -> tuple[torch.Tensor, torch.Tensor]:
        return (1.0 + w(d, scale=0.1)).to(dtype), w(d, scale=0.1)

    layers = [
        Layer(w(d, 3 * d), w(d, d), w(d, 4 * d), w(4 * d), w(4 * d, d), ln(), ln())
        for _ in range(n_layers)
    ]
    return Model(n_heads, w(VOCAB, d), w(max_seq, d), layers, w(d, VOCAB))


def _embed(ids: torch.Tensor, model: Model) -> torch.Tensor:
    return model.token_emb[ids] + model.pos_emb[: ids.shape[1]]


def _heads(qkv: torch.Tensor, batch: int, seq: int, n_heads: int) -> list[torch.Tensor]:
    """(B*S, 3d) -> q, k, v as (B, H, S, d/H) views."""
    d = qkv.shape[1] // 3
    return list(qkv.view(batch, seq, 3, n_heads, d // n_heads).permute(2, 0, 3, 1, 4))


def forward(ids: torch.Tensor, model: Model) -> torch.Tensor:
    """toy decoder (post-LN, causal) on matmul, attention, fused add+LayerNorm.

    Logits (batch, seq, VOCAB) from token ids (batch, seq), on the library's kernels.
    """
    batch, seq = ids.shape
    x = _embed(ids, model).reshape(batch * seq, -1)
    d = x.shape[1]
    no_drop = torch.zeros(1, dtype=torch.int64, device=x.device)  # p = 0 keeps every element
    for i, layer in enumerate(model.layers):
        with nvtx.annotate(f"layer{i}", domain=NVTX_DOMAIN):
            q, k, v = _heads(matmul(x, layer.w_qkv), batch, seq, model.n_heads)
            a = attention(q, k, v, causal=True).transpose(1, 2).reshape(batch * seq, d)
            x, _ = add_dropout_layer_norm(matmul(a, layer.w_o), x, *layer.ln1, 0.0, no_drop)
            f = matmul(matmul_bias_gelu(x, layer.w_1, layer.b_1), layer.w_2)
            x, _ = add_dropout_layer_norm(f, x, *layer.ln2, 0.0, no_drop)
    return matmul(x, model.w_out).view(batch, seq, VOCAB)


def reference_forward(ids: torch.Tensor, model: Model) -> torch.Tensor:
    """The same model in torch ops."""
    batch, seq = ids.shape
    x = _embed(ids, model).reshape(batch * seq, -1)
    d = x.shape[1]
    for layer in model.layers:
        q, k, v = _heads(x @ layer.w_qkv, batch, seq, model.n_heads)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(batch * seq, d)
        x = F.layer_norm(x + a @ layer.w_o, (d,), *layer.ln1)
        f = F.gelu(x @ layer.w_1 + layer.b_1, approximate="tanh") @ layer.w_2
        x = F.layer_norm(x + f, (d,), *layer.ln2)
    return (x @ model.w_out).view(batch, seq, VOCAB)


def _inputs(shape, dtype, device):
    batch, seq, d, n_heads, n_layers = shape
    ids = torch.randint(0, VOCAB, (batch, seq), device=device)
    return ids, make_model(d, n_heads, n_layers, seq, dtype, device)


def _flops(shape) -> float:
    batch, seq, d, n_heads, n_layers = shape
    tokens = batch * seq
    per_layer = 2.0 * tokens * d * (3 * d + d + 8 * d) + 2.0 * batch * seq * seq * d  # causal
    return n_layers * per_layer + 2.0 * tokens * d * VOCAB


def _bytes(shape, esize) -> float:
    """Weights read once, ids in, logits out: the floor for a forward pass."""
    batch, seq, d, n_heads, n_layers = shape
    weights = n_layers * (12 * d * d + 4 * d + 4 * d) + VOCAB * d * 2 + seq * d
    return float(weights + batch * seq * VOCAB) * esize + batch * seq * 8


# Several GEMMs and norms deep: the errors of TF32 (fp32 inputs) and of 16-bit intermediates add
# up layer after layer, and LayerNorm re-amplifies them.
_TOLERANCES = {
    "float32": Tolerance(atol=5e-3, rtol=2e-2, rel_l2=1e-2),
    "float16": Tolerance(atol=1e-2, rtol=5e-2, rel_l2=2e-2),
    "bfloat16": Tolerance(atol=5e-2, rtol=1e-1, rel_l2=5e-2),
}

TRANSFORMER = KernelSpec(
    name="transformer",
    kernel_fn=forward,
    reference_fn=reference_forward,
    make_inputs=_inputs,
    shapes={
        "check": [(1, 13, 64, 2, 2), (2, 8, 32, 2, 1)],
        "bench": [(8, 128, 256, 8, 4), (8, 1024, 1024, 16, 4)],
    },
    tolerances=_TOLERANCES,
    flops=_flops,
    bytes_moved=_bytes,
    nvtx="transformer",
    # a workload of many small launches: the peer a user would pick is the CUDA-graph mode
    compile_mode="reduce-overhead",
    noncontig=False,  # the only tensor input is the ids; strided ids would test torch's gather
    kind="workload",
)
