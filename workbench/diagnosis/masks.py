"""An off-by-one mask read from TTIR: offsets compared with `<=` against a size argument, the
comparison feeding the mask of a tl.load or tl.store (pure text).

`offs <= n` lets offset n through, one element past a tensor of n: in TTIR an `arith.cmpi sle`
(or `ule`; `sge`/`uge` with the operands the other way round) whose offsets side comes from a
tt.make_range and whose size side is an integer argument of the kernel (through splats,
broadcasts and casts; `n - 1` is a subtraction and is left alone), and whose result reaches
the mask operand of a load or store (through `&`, `|`, broadcasts). The finding is at the line
of the comparison, medium on its own: the check's guard regions and bounds (or memcheck) prove
it when the access happens.
"""

from __future__ import annotations

import re

from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text
from workbench.ir.linemap import StageMap

_NAME = r"%[\w.#$-]+"
_DEF = re.compile(rf"^\s*({_NAME})\s*=\s*([\w.]+)\s*(.*)$")
_CMP = re.compile(rf"arith\.cmpi\s+(sle|ule|sge|uge)\s*,\s*({_NAME})\s*,\s*({_NAME})")
_ACCESS = re.compile(r"\btt\.(load|store)\s+(?P<ops>[^:]*):")
_ARGS = re.compile(rf"({_NAME})\s*:\s*i(?:32|64)\b")
_THROUGH = {"tt.splat", "tt.broadcast", "arith.extsi", "arith.extui", "arith.trunci"}
_THROUGH |= {"tt.expand_dims", "tt.reshape", "arith.index_cast"}
_MASK_OPS = {"arith.andi", "arith.ori", "tt.broadcast", "tt.expand_dims", "tt.splat"}
_MASK_OPS |= {"tt.reshape", "ttg.convert_layout"}


def off_by_one(ttir: str, smap: StageMap, config: str) -> list[Finding]:
    """Masks made of `offs <= size` comparisons, one finding per comparison line."""
    lines = ttir.splitlines()
    head = next((line for line in lines if "tt.func" in line), "")
    args = set(_ARGS.findall(head[head.find("(") + 1 :]))
    defs: dict[str, tuple[str, list[str]]] = {}
    for line in lines:
        text = line.split(" loc(")[0]
        if m := _DEF.match(text):
            defs[m.group(1)] = (m.group(2), re.findall(_NAME, m.group(3)))
    compares: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        m = _CMP.search(line.split(" loc(")[0])
        d = _DEF.match(line)
        if not m or not d:
            continue
        offsets, size = (m.group(2), m.group(3)) if m.group(1) in ("sle", "ule") else m.group(3, 2)
        if _is_size(size, defs, args) and _from_range(offsets, defs):
            compares[d.group(1)] = n
    where = {n: key for key, found in smap.lines.items() for n in found}
    found = []
    for name, n in compares.items():
        ops = _masked_ops(name, lines, defs)
        if not ops:
            continue
        file, line = where.get(n, (None, None))
        evidence = {"config": config, "ttir_line": n, "ops": ops, "line": line}
        found.append(
            Finding(
                "off-by-one-mask",
                f"the mask of {' and '.join(f'tl.{op}' for op in ops)} compares offsets with <= "
                "a size: offset n, one past the end, gets through",
                "medium",
                evidence,
                fix_text("off-by-one-mask", evidence),
                file,
                line,
            )
        )
    return found


def _is_size(name: str, defs: dict[str, tuple[str, list[str]]], args: set[str]) -> bool:
    """A kernel's integer argument, perhaps splat, broadcast or cast (not a sum or difference)."""
    for _ in range(16):
        if name in args:
            return True
        op, operands = defs.get(name, ("", []))
        if op not in _THROUGH or not operands:
            return False
        name = operands[0]
    return False


def _from_range(name: str, defs: dict[str, tuple[str, list[str]]]) -> bool:
    """Whether a tt.make_range is among the values `name` is computed from."""
    todo, seen = [name], set()
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        op, operands = defs.get(cur, ("", []))
        if op == "tt.make_range":
            return True
        todo += operands
    return False


def _masked_ops(compare: str, lines: list[str], defs: dict) -> list[str]:
    """The kinds of access (load, store) whose mask the comparison reaches."""
    mask = {compare}
    for name, (op, operands) in defs.items():  # defs are in program order
        if op in _MASK_OPS and mask & set(operands):
            mask.add(name)
    ops = []
    for line in lines:
        m = _ACCESS.search(line.split(" loc(")[0])
        if not m:
            continue
        operands = re.findall(_NAME, m.group("ops"))
        at = 1 if m.group(1) == "load" else 2
        if len(operands) > at and operands[at] in mask and m.group(1) not in ops:
            ops.append(m.group(1))
    return ops
