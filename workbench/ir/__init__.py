"""Compiled kernels: the ir job (child), capture, disassembly, line maps, resources, diffs.

May import diagnosis, run, catalog and runtime; triton only in the child-side modules.
"""
