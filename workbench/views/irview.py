"""Following a kernel's Python lines through its IR, as the IR tab does: the IR lines of one
Python line in a stage (`ir --line N`), the Python line an IR line came from, and text search in
a stage. Pure: reads the variant's source map, never its files."""

from __future__ import annotations

from workbench.ir.result import IrVariant


def ir_lines(variant: IrVariant, stage: str, line: int) -> list[int]:
    """The 1-based lines of `stage` that carry code from Python line `line` of the kernel file."""
    return list(((variant.sourcemap.get(stage) or {}).get(variant.file) or {}).get(str(line), []))


def python_line(variant: IrVariant, stage: str, ir_line: int) -> int | None:
    """The kernel-file line that IR line `ir_line` of `stage` came from (None: no code of it)."""
    for py, found in ((variant.sourcemap.get(stage) or {}).get(variant.file) or {}).items():
        if ir_line in found:
            return int(py)
    return None


def mapped_lines(variant: IrVariant, stage: str) -> set[int]:
    """The kernel-file lines that have code in `stage`."""
    return {int(py) for py in ((variant.sourcemap.get(stage) or {}).get(variant.file) or {})}


def search(lines: list[str], text: str) -> list[int]:
    """1-based numbers of the lines holding `text` (case-insensitive); none for empty text."""
    needle = text.lower()
    return [i for i, line in enumerate(lines, 1) if needle and needle in line.lower()]


def trail(variant: IrVariant, stage: str, line: int) -> str:
    """One status phrase: how many lines of `stage` the Python line became."""
    found = ir_lines(variant, stage, line)
    if not found:
        return f"line {line}: no {stage} code (a comment, a declaration, or folded away)"
    return f"line {line} -> {len(found)} {stage} line(s)"
