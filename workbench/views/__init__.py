"""Rows and text shared by the CLI and the TUI: result data in, plain cells and lines out.

May import the stages, diagnosis, run, catalog and runtime; never textual, rich, torch or triton.
"""
