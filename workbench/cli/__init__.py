"""The command line: one module per command, every action headless with --json.

The top layer: may import anything below it, and the TUI (which `python -m workbench` opens).
"""
