"""Map each Python line of a kernel to its lines in every IR stage (pure text parsing).

TTIR/TTGIR ops end with an MLIR `loc(...)`; LLIR instructions carry `!dbg !N` (a DILocation);
PTX has `.loc FILE LINE COL` directives; `nvdisasm -c -gi` prints `//## File "...", line N`
before the SASS it covers. Code inlined from Triton's own library (`tl.sum`, `tl.max`, ...)
carries a chain of call sites; it is folded back to the innermost frame outside the library,
which is the kernel line that called it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
Frame = tuple[str, int, int]
"""(file, line, column); column 0 where the stage has none."""
Key = tuple[str, int]


def is_library(path: str) -> bool:
    """Frames in Triton's language package are helpers to fold into their caller."""
    return "/triton/language/" in path.replace("\\", "/")


def fold(frames: Iterable[Frame], library: Callable[[str], bool] = is_library) -> Key | None:
    """The innermost frame outside the library: the kernel line that the code belongs to."""
    for file, line, _ in frames:
        if not library(file) and line > 0:
            return file, line
    return None


@dataclass
class StageMap:
    """One stage's map: (python file, python line) -> IR line numbers (1-based, ascending)."""

    stage: str
    lines: dict[Key, list[int]] = field(default_factory=dict)
    callers: dict[Key, set[Key]] = field(default_factory=dict)
    """Library line -> the kernel lines it was inlined into (PTX only; a hint for SASS)."""

    def add(self, key: Key | None, ir_line: int) -> None:
        if key is not None:
            bucket = self.lines.setdefault(key, [])
            if not bucket or bucket[-1] != ir_line:
                bucket.append(ir_line)

    def for_line(self, file: str, line: int) -> list[int]:
        return self.lines.get((file, line), [])

    def to_dict(self) -> dict[str, dict[int, list[int]]]:
        out: dict[str, dict[int, list[int]]] = {}
        for (file, line), ir in sorted(self.lines.items()):
            out.setdefault(file, {})[line] = ir
        return out


# ---- MLIR (TTIR, TTGIR) ----------------------------------------------------------------------

_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(#loc\d*)|(\d+)|([A-Za-z_][\w.]*)|(.))')


def _tokens(expr: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(expr):
        tok = next((g for g in m.groups() if g is not None), None)
        if tok is not None:
            out.append(tok)
    return out


class _MlirLocs:
    """Resolves MLIR location expressions to frame chains (innermost first)."""

    def __init__(self, defs: dict[str, str]):
        self.defs = defs
        self.memo: dict[str, list[Frame]] = {}

    def ref(self, name: str) -> list[Frame]:
        if name not in self.memo:
            self.memo[name] = []  # guards against a cycle
            self.memo[name] = self.expr(self.defs.get(name, "unknown"))
        return self.memo[name]

    def expr(self, text: str) -> list[Frame]:
        toks = _tokens(text)
        frames, _ = self._parse(toks, 0)
        return frames

    def _parse(self, t: list[str], i: int) -> tuple[list[Frame], int]:
        if i >= len(t):
            return [], i
        tok = t[i]
        if tok.startswith("#loc"):
            return self.ref(tok), i + 1
        if tok == "unknown":
            return [], i + 1
        if tok == "callsite" and i + 1 < len(t) and t[i + 1] == "(":
            callee, i = self._parse(t, i + 2)
            if i < len(t) and t[i] == "at":
                caller, i = self._parse(t, i + 1)
            else:
                caller = []
            return callee + caller, _skip_to_close(t, i)
        if tok == "fused":
            i += 1
            if i < len(t) and t[i] == "<":
                while i < len(t) and t[i] != ">":
                    i += 1
                i += 1
            found: list[Frame] = []
            if i < len(t) and t[i] == "[":
                i += 1
                while i < len(t) and t[i] != "]":
                    frames, i = self._parse(t, i)
                    found = found or frames
                    if i < len(t) and t[i] == ",":
                        i += 1
                i += 1
            return found, i
        if tok.startswith('"'):
            name = tok[1:-1]
            if i + 4 < len(t) and t[i + 1] == ":" and t[i + 2].isdigit() and t[i + 3] == ":":
                frame = (name, int(t[i + 2]), int(t[i + 4]) if t[i + 4].isdigit() else 0)
                i += 5
                while i < len(t) and t[i] not in (")", ",", "]", "at"):
                    i += 1  # a "to L:C" range tail
                return [frame], i
            if i + 1 < len(t) and t[i + 1] == "(":  # a name loc around a child loc
                child, i = self._parse(t, i + 2)
                return child, _skip_to_close(t, i)
            return [], i + 1
        return [], i + 1


def _skip_to_close(t: list[str], i: int) -> int:
    depth = 0
    while i < len(t):
        if t[i] == "(":
            depth += 1
        elif t[i] == ")":
            if depth == 0:
                return i + 1
            depth -= 1
        i += 1
    return i


def _trailing_loc(line: str) -> str | None:
    """The expression of the `loc(...)` that ends the line, if any."""
    text = line.rstrip()
    if not text.endswith(")"):
        return None
    start = text.rfind("loc(")
    while start >= 0:
        depth, j = 0, start + 3
        for j in range(start + 3, len(text)):
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    break
        if depth == 0 and j == len(text) - 1:
            return text[start + 4 : -1]
        start = text.rfind("loc(", 0, start)
    return None


def map_mlir(
    text: str, stage: str = "ttir", library: Callable[[str], bool] = is_library
) -> StageMap:
    """TTIR or TTGIR: each op line to the kernel line of its `loc`. A region op (scf.for,
    tt.reduce, tt.func) prints its loc on the closing line; its opening line gets it too."""
    lines = text.splitlines()
    defs = {}
    for line in lines:
        m = _LOC_DEF.match(line)
        if m:
            defs[m.group(1)] = m.group(2)
    locs = _MlirLocs(defs)
    result = StageMap(stage)
    pending: list[int] = []
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "//", "^")):
            continue
        expr = _trailing_loc(line)
        key = fold(locs.expr(expr), library) if expr is not None else None
        if stripped.startswith("}") and pending:
            opener = pending.pop()
            result.add(key, opener)
        if expr is None and stripped.endswith("{"):
            pending.append(n)
        result.add(key, n)
    for bucket in result.lines.values():
        bucket.sort()
    return result


# ---- LLVM IR ---------------------------------------------------------------------------------

_MD = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_FIELD = re.compile(r'(\w+):\s*("(?:[^"\\]|\\.)*"|![0-9]+|[^,]+)')
_DBG = re.compile(r"!dbg !(\d+)")


def map_llir(text: str, library: Callable[[str], bool] = is_library) -> StageMap:
    """LLVM IR: instructions with `!dbg !N`, resolved through DILocation's scope and inlinedAt."""
    nodes: dict[str, tuple[str, dict[str, str]]] = {}
    lines = text.splitlines()
    for line in lines:
        m = _MD.match(line)
        if m:
            fields = {k: v.strip() for k, v in _FIELD.findall(m.group(3))}
            nodes[m.group(1)] = (m.group(2), fields)

    def file_of(ref: str, depth: int = 0) -> str:
        kind, f = nodes.get(ref.lstrip("!"), ("", {}))
        if kind == "DIFile":
            name, folder = f.get("filename", '""')[1:-1], f.get("directory", '""')[1:-1]
            return name if os.path.isabs(name) or not folder else f"{folder}/{name}"
        for key in ("file", "scope"):
            if key in f and depth < 32:
                found = file_of(f[key], depth + 1)
                if found:
                    return found
        return ""

    memo: dict[str, list[Frame]] = {}

    def frames(ref: str, depth: int = 0) -> list[Frame]:
        if ref in memo:
            return memo[ref]
        kind, f = nodes.get(ref, ("", {}))
        if kind != "DILocation" or depth > 64:
            return []
        here = (file_of(f.get("scope", "")), int(f.get("line", "0")), int(f.get("column", "0")))
        parent = f.get("inlinedAt", "").lstrip("!")
        memo[ref] = [here] + (frames(parent, depth + 1) if parent else [])
        return memo[ref]

    result = StageMap("llir")
    for n, line in enumerate(lines, 1):
        if line.startswith("!"):
            continue
        m = _DBG.search(line)
        if m:
            result.add(fold(frames(m.group(1)), library), n)
    return result


# ---- PTX -------------------------------------------------------------------------------------

_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(
    r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?"
)
_PTX_AT = re.compile(r"([^\s@\[\]:]+):(\d+):(\d+)")


def map_ptx(text: str, library: Callable[[str], bool] = is_library) -> StageMap:
    """PTX: instructions belong to the last `.loc`; `inlined_at` names the caller, whose own
    caller is known from the `.loc` that introduced it just before."""
    lines = text.splitlines()
    files = {m.group(1): m.group(2) for m in map(_PTX_FILE.match, lines) if m}
    by_name = {os.path.basename(path): path for path in files.values()}
    folded: dict[Frame, Key | None] = {}
    current: Key | None = None
    result = StageMap("ptx")
    for n, line in enumerate(lines, 1):
        m = _PTX_LOC.match(line)
        if m:
            here = (files.get(m.group(1), m.group(1)), int(m.group(2)), int(m.group(3)))
            if m.group(4) is None and "@[" in line:  # 3.4: the callers only in the comment
                at = line[line.index("@[") :]
                chain = [(by_name.get(f, f), int(ln), int(c)) for f, ln, c in _PTX_AT.findall(at)]
                current = fold([here, *chain], library)
            elif m.group(4) is None:
                current = fold([here], library)
            else:
                caller = (files.get(m.group(4), m.group(4)), int(m.group(5)), int(m.group(6)))
                outer = fold([caller], library) or folded.get(caller)
                current = fold([here], library) or outer
            folded[here] = current
            if library(here[0]) and current is not None:
                result.callers.setdefault(here[:2], set()).add(current)
            continue
        stripped = line.strip()
        if _is_ptx_instruction(stripped):
            result.add(current, n)
    return result


def _is_ptx_instruction(s: str) -> bool:
    return bool(s) and not s.startswith((".", "//", "{", "}", "$", ")", "(")) and s.endswith(";")


# ---- SASS (nvdisasm -c -gi) ------------------------------------------------------------------

_SASS_FILE = re.compile(
    r'//## File "([^"]+)", line (\d+)(?:, column (\d+))?(?: inlined at "([^"]+)", line (\d+))?'
)
_SASS_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")


def map_sass(
    text: str,
    library: Callable[[str], bool] = is_library,
    callers: dict[Key, set[Key]] | None = None,
) -> StageMap:
    """SASS from `nvdisasm -c -gi`: a run of `//## File` comments (innermost first, each with
    its `inlined at` caller) describes the instructions after it. Where the cubin has no
    inlining records (Triton 3.4), a library line goes to the one kernel line that the PTX
    shows it inlined into (`callers`), and stays unmapped when there are several."""
    result = StageMap("sass")
    group: list[Frame] = []
    current: Key | None = None
    in_group = False
    for n, line in enumerate(text.splitlines(), 1):
        m = _SASS_FILE.search(line)
        if m:
            if not in_group:
                group, in_group = [], True
            group.append((m.group(1), int(m.group(2)), int(m.group(3) or 0)))
            if m.group(4):
                group.append((m.group(4), int(m.group(5)), 0))
            current = fold(group, library) or _only_caller(group, callers or {})
            continue
        in_group = False
        if _SASS_INSN.match(line):
            result.add(current, n)
    return result


def _only_caller(frames: list[Frame], callers: dict[Key, set[Key]]) -> Key | None:
    for file, line, _ in frames:
        found = callers.get((file, line), set())
        if len(found) == 1:
            return next(iter(found))
    return None


MAPPERS: dict[str, Callable[[str], StageMap]] = {
    "ttir": lambda text: map_mlir(text, "ttir"),
    "ttgir": lambda text: map_mlir(text, "ttgir"),
    "llir": map_llir,
    "ptx": map_ptx,
}


@dataclass
class SourceMap:
    """Every stage's map, plus the texts, so one Python line's trail can be shown."""

    stages: dict[str, StageMap]
    texts: dict[str, str]

    @classmethod
    def build(cls, texts: dict[str, str]) -> SourceMap:
        stages = {s: MAPPERS[s](texts[s]) for s in STAGES if s in texts and s in MAPPERS}
        if "sass" in texts:
            ptx = stages.get("ptx") or map_ptx(texts.get("ptx", ""))
            stages["sass"] = map_sass(texts["sass"], callers=ptx.callers)
        return cls(stages, {s: texts[s] for s in stages})

    def files(self) -> list[str]:
        return sorted({f for m in self.stages.values() for f, _ in m.lines})

    def trail(self, file: str, line: int) -> dict[str, list[tuple[int, str]]]:
        """For one Python line: each stage's (IR line number, IR text) in order."""
        out = {}
        for stage, smap in self.stages.items():
            ir = self.texts[stage].splitlines()
            out[stage] = [(n, ir[n - 1]) for n in smap.for_line(file, line)]
        return out

    def to_dict(self) -> dict[str, dict[str, dict[int, list[int]]]]:
        return {stage: smap.to_dict() for stage, smap in self.stages.items()}
