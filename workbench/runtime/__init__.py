"""What every layer needs: user-facing errors, tensor plumbing, Triton version differences.

Imports nothing of the workbench; compat and tensors import triton/torch, so only children use them.
"""
