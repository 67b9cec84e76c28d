"""Which loads and stores reach one pointer argument, read from TTIR (pure text parsing).

A guard region says which tensor was written or read out of bounds, not where. The kernel's
TTIR says which accesses can reach that tensor: the pointer argument's value flows through
tt.splat, tt.addptr, tt.broadcast, loop-carried block pointers and the like (every op whose
types hold a !tt.ptr) into the pointer operand of tt.load, tt.store and the atomics. The line
map (`ir.linemap.map_mlir`) gives their Python lines; where one access is left (or one masked
access among several), that is the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.ir.linemap import Key, map_mlir

_FUNC_ARG = re.compile(r"(%[\w.#$-]+)\s*:\s*(!tt\.ptr|tensor|!tt\.tensordesc|i\d+|f\d+|bf16)")
_NAME = re.compile(r"%[\w.#$-]+")
_RESULTS = re.compile(r"^\s*(%[\w.#$-]+)(?::\d+)?(?:\s*,\s*(%[\w.#$-]+))*\s*=\s*([\w.]+)")
_ITER_ARG = re.compile(r"(%[\w.#$-]+)\s*=\s*(%[\w.#$-]+)")
_ACCESS = re.compile(r"\btt\.(load|store|atomic_rmw|atomic_cas)\b(?P<ops>[^:]*):")
READS = ("load", "atomic_rmw", "atomic_cas")
WRITES = ("store", "atomic_rmw", "atomic_cas")


@dataclass(frozen=True)
class Access:
    op: str
    """load, store, atomic_rmw or atomic_cas."""
    masked: bool
    ttir_line: int
    where: Key | None


def pointer_args(ttir: str) -> list[str]:
    """The SSA names of the kernel's pointer arguments, in order (tt.func's signature)."""
    head = next((line for line in ttir.splitlines() if "tt.func" in line), "")
    inside = head[head.find("(") + 1 :]
    return [m.group(1) for m in _FUNC_ARG.finditer(inside) if m.group(2) == "!tt.ptr"]


def accesses(ttir: str, pointer: int) -> list[Access]:
    """The loads, stores and atomics whose pointer derives from the `pointer`-th pointer
    argument (counted among the kernel's pointer arguments: its tensor arguments, in order)."""
    names = pointer_args(ttir)
    if pointer >= len(names):
        return []
    tainted = {names[pointer]}
    where = {n: key for key, lines in map_mlir(ttir).lines.items() for n in lines}
    found = []
    for n, line in enumerate(ttir.splitlines(), 1):
        text = line.split(" loc(")[0]
        if m := _ACCESS.search(text):
            ops = _NAME.findall(m.group("ops"))
            if ops and ops[0] in tainted:
                op = m.group(1)
                masked = len(ops) >= {"load": 2, "store": 3}.get(op, 3)
                found.append(Access(op, masked, n, where.get(n)))
            continue
        if "!tt.ptr" not in text or "=" not in text:
            continue
        results = _RESULTS.match(text)
        if results is None:
            continue
        rhs = text[text.index("=") + 1 :]
        if "iter_args(" in rhs:  # a loop carrying pointers: taint the carried names
            carried = rhs[rhs.index("iter_args(") :]
            tainted |= {a for a, init in _ITER_ARG.findall(carried) if init in tainted}
        elif set(_NAME.findall(rhs)) & tainted:
            tainted |= {g for g in results.groups()[:-1] if g}
    return found


def access_line(ttir: str, pointer: int, ops: tuple[str, ...]) -> tuple[Key | None, list[Key]]:
    """(the one line, every candidate line) of the accesses of kinds `ops` (READS or WRITES)
    to that pointer: one line when only one access, or only one masked access, is left."""
    found = [a for a in accesses(ttir, pointer) if a.op in ops and a.where is not None]
    keys = list(dict.fromkeys(a.where for a in found if a.where is not None))
    if len(keys) == 1:
        return keys[0], keys
    masked = list(dict.fromkeys(a.where for a in found if a.masked and a.where is not None))
    return (masked[0] if len(masked) == 1 else None), keys
