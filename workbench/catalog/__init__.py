"""The kernels a project has: the KernelSpec contract, discovery from source, module loading.

May import runtime only; discovery reads source without importing torch or triton.
"""
