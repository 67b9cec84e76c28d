"""GELU (tanh form) in the three-name contract: kernel_fn, reference_fn, get_inputs.

A module in this form declares no KernelSpec: the workbench wraps it, get_inputs() decides the
shape, and `check --dtype` casts its floating inputs. get_inputs() makes CUDA tensors; on a
machine without a GPU the workbench redirects them to the CPU and runs Triton's interpreter.
"""

import torch
import triton
import triton.language as tl

from workbench.runtime.compat import autotune_configs


@triton.autotune(
    configs=autotune_configs(
        [
            triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
            triton.Config({"BLOCK_SIZE": 2048}, num_warps=4),
            triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
        ],
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=4),
    ),
    key=["n_elements"],
)
@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # exp wants fp32
    # 0.5 x (1 + tanh(z)) = x * sigmoid(2z), z = sqrt(2/pi) (x + 0.044715 x^3)
    two_z = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-two_z))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n_elements = x.numel()

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    gelu_tanh_kernel[grid](x, y, n_elements)
    return y


# --- The contract ---
kernel_fn = gelu_tanh


def reference_fn(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1 << 20, device="cuda")]
