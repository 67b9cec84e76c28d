"""triton-workbench: check, measure, read and profile Triton kernels."""

__version__ = "0.1.0"
