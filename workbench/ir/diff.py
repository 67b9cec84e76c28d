"""Differences between two compiled variants: resources first, then each IR stage.

Location noise (MLIR `loc(...)`, `#loc` lines, PTX `.loc`, SASS line comments, addresses and
encodings) is dropped before diffing, and value, register and label numbers are blanked: one
inserted op renumbers every value after it, which would otherwise mark every later line as
changed. What remains is the code that changed; the files on disk keep the full text. Only
`diff_variants` reads files (the variants' artifacts); the rest is pure.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.ir.result import IrVariant

_SASS_ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/\s*")
_SASS_ENCODING = re.compile(r"/\*\s*0x[0-9a-f]+\s*\*/")
_SSA = re.compile(r"%[\w.$-]+")  # MLIR / LLVM values: %0, %arg3, %cst_1, %12
_LLVM_LABEL = re.compile(r"^(\d+):")
_PTX_REG = re.compile(r"%([a-z]+)\d+\b")  # %r12, %rd3, %f4, %p1 (the class letters stay)
_PTX_LABEL = re.compile(r"\$L__\w+")
_SASS_REG = re.compile(r"\b(U?R|U?P)\d+\b")  # R12, UR4, P0, UP1; RZ and PT stay
_SASS_BRANCH = re.compile(
    r"\b(BRA|BSSY|CALL\.REL(?:\.NOINC)?|JMP)\b([^;]*?)(0x[0-9a-f]+|`\(\.L_x_\d+\))"
)


def _strip_locs(line: str) -> str:
    """Remove every ` loc(...)` (balanced parentheses) from an MLIR line."""
    while (start := line.find(" loc(")) >= 0:
        depth, end = 0, len(line)
        for j in range(start + 4, len(line)):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            if depth == 0:
                end = j + 1
                break
        line = line[:start] + line[end:]
    return line


def normalize(stage: str, text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = line.rstrip()
        if stage in ("ttir", "ttgir"):
            if s.startswith("#loc"):
                continue
            s = _SSA.sub("%_", _strip_locs(s))
        elif stage == "llir":
            if s.startswith("!") and ("DILocation" in s or "DILexicalBlock" in s):
                continue
            s = _LLVM_LABEL.sub("_:", _SSA.sub("%_", re.sub(r", !dbg !\d+", "", s)))
        elif stage == "ptx":
            if s.strip().startswith((".loc", ".file")):
                continue
            s = _PTX_LABEL.sub("$L_", _PTX_REG.sub(r"%\1_", s))
        elif stage == "sass":
            if "//##" in s:
                continue
            s = _SASS_ENCODING.sub("", _SASS_ADDR.sub("", s)).strip()
            s = _SASS_BRANCH.sub(r"\1\2_", _SASS_REG.sub(r"\1_", s))
        if s.strip():
            out.append(s)
    return out


@dataclass
class StageDiff:
    stage: str
    added: int
    removed: int
    lines_a: int
    lines_b: int
    text: str

    def to_dict(self, with_text: bool = False) -> dict:
        d = {
            "stage": self.stage,
            "added": self.added,
            "removed": self.removed,
            "lines_a": self.lines_a,
            "lines_b": self.lines_b,
        }
        if with_text:
            d["text"] = self.text
        return d


def stage_diff(stage: str, a: str, b: str, name_a: str = "a", name_b: str = "b") -> StageDiff:
    la, lb = normalize(stage, a), normalize(stage, b)
    diff = list(difflib.unified_diff(la, lb, name_a, name_b, lineterm="", n=2))
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    return StageDiff(stage, added, removed, len(la), len(lb), "\n".join(diff))


RESOURCE_FIELDS = (
    "regs",
    "spill_bytes",
    "shared_bytes",
    "num_warps",
    "num_stages",
    "occupancy_percent",
    "active_warps",
    "limiter",
)


def _flat(res: dict | None) -> dict:
    res = res or {}
    occ = res.get("occupancy") or {}
    return {
        **{k: res.get(k) for k in RESOURCE_FIELDS[:5]},
        "occupancy_percent": occ.get("percent"),
        "active_warps": occ.get("active_warps"),
        "limiter": occ.get("limiter"),
    }


def resource_changes(a: dict | None, b: dict | None) -> list[tuple[str, object, object, object]]:
    """(field, a, b, b - a) for each resource figure; the delta is None for text or missing."""
    fa, fb = _flat(a), _flat(b)
    rows = []
    for k in RESOURCE_FIELDS:
        va, vb = fa[k], fb[k]
        numeric = isinstance(va, (int, float)) and isinstance(vb, (int, float))
        rows.append((k, va, vb, round(vb - va, 1) if numeric else None))
    return rows


@dataclass
class VariantDiff:
    """Two compiled variants, of one kernel or of two, compared."""

    kernel_a: str
    a: IrVariant
    kernel_b: str
    b: IrVariant
    resources: list[tuple[str, object, object, object]]
    stages: list[StageDiff]

    def to_dict(self, text_stage: str | None = None) -> dict:
        """The comparison as JSON; the diff text only for `text_stage`."""
        return {
            "a": {"kernel": self.kernel_a, "label": self.a.label},
            "b": {"kernel": self.kernel_b, "label": self.b.label},
            "resources": [dict(zip(("field", "a", "b", "delta"), r)) for r in self.resources],
            "stages": [d.to_dict(with_text=text_stage == d.stage) for d in self.stages],
        }


def diff_variants(
    kernel_a: str, a: IrVariant, kernel_b: str, b: IrVariant, stages: Sequence[str]
) -> VariantDiff:
    """Resource changes from a to b, and the diff of each of `stages` both variants wrote."""
    diffs = [
        stage_diff(
            s, Path(a.artifacts[s]).read_text(), Path(b.artifacts[s]).read_text(), a.label, b.label
        )
        for s in stages
        if s in a.artifacts and s in b.artifacts
    ]
    return VariantDiff(kernel_a, a, kernel_b, b, resource_changes(a.resources, b.resources), diffs)
