"""Compiled kernels: the ir job (child), capture, disassembly, line maps, resources, diffs.

May import run, catalog and runtime, no other stage (the diagnosis reads its facts, `facts`,
from above); triton only in the child-side modules.
"""
