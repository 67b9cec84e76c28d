"""The kernels a project has: the KernelSpec contract, discovery from source, module loading,
and whether a result is older than the source it came from (`freshness`).

May import runtime only; discovery reads source without importing torch or triton.
"""
