"""Find kernel modules and read what they declare without importing them.

Importing a kernel module imports torch and triton, which takes seconds; listing must not. So
the catalog comes from the source: `KernelSpec(...)` calls with literal fields (or module-level
names bound to literals, or fields spread from a module-level dict: `**SHARED`, or the
description in the docstring of a kernel_fn defined in the module), or the three names of the
kernel-writing contract (`kernel_fn`, `reference_fn`, `get_inputs`). Syntax errors
and top-level imports of missing packages are found here too; anything else that breaks at
import time is reported by the child process that imports the module (`workbench.catalog.loader`).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import json
import operator
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from workbench.catalog.spec import DTYPES, summary
from workbench.runtime.errors import Problem, fail

THREE_NAMES = ("kernel_fn", "reference_fn", "get_inputs")
SCAN_CACHE_ENV = "WORKBENCH_SCAN_CACHE"
"""The file that keeps what discovery read from each module (see `_ScanCache`)."""
BUILTIN_KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@dataclass(frozen=True)
class KernelEntry:
    """A kernel as the source declares it."""

    name: str
    file: str
    line: int
    kind: str = "kernel"
    contract: str = "spec"
    """"spec" (a KernelSpec) or "three-name" (kernel_fn, reference_fn, get_inputs)."""
    dtypes: tuple[str, ...] | None = None
    """None when the inputs decide (three-name contract) or the source is not literal."""
    shapes: dict[str, list[list[int]]] | None = None
    description: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Catalog:
    kernels: list[KernelEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def find(self, name: str) -> KernelEntry:
        for k in self.kernels:
            if k.name == name:
                return k
        broken = [p for p in self.problems if p.file and Path(p.file).stem == name]
        if broken:
            raise fail(
                "module-broken",
                f"kernel {name!r} is in a module that does not load: {broken[0].cause}",
                broken[0].remedy,
                file=broken[0].file,
                line=broken[0].line,
            )
        missing = [p.cause for p in self.problems if p.kind == "path-missing"]
        if missing:
            raise fail(
                "path-missing",
                f"no kernel named {name!r}: {'; '.join(missing)}",
                "give --path an existing kernel module or folder",
                source="usage",
            )
        close = difflib.get_close_matches(name, [k.name for k in self.kernels], n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise fail(
            "unknown-kernel",
            f"no kernel named {name!r}",
            f"{hint}run `python -m workbench list` to see the names; add a folder with --path",
            source="usage",
        )


def search_roots(paths: Sequence[str] = ()) -> list[Path]:
    """--path entries, else ./kernels when there is one, else the bundled kernel library."""
    if paths:
        return [Path(p).resolve() for p in paths]
    local = Path.cwd() / "kernels"
    return [local.resolve() if local.is_dir() else BUILTIN_KERNELS]


def module_files(roots: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files.extend(
                p
                for p in sorted(root.rglob("*.py"))
                if not p.name.startswith(("_", "test_")) and "__pycache__" not in p.parts
            )
    return files


def discover(paths: Sequence[str] = ()) -> Catalog:
    catalog = Catalog()
    roots = search_roots(paths)
    for root in roots:
        if not root.exists():
            catalog.problems.append(
                Problem(
                    "path-missing",
                    f"--path {root} does not exist",
                    "check the --path argument",
                    source="usage",
                )
            )
    seen: dict[str, str] = {}
    cache = _ScanCache.load()
    for path in module_files(roots):
        entries, problems = cache.scan(path)
        catalog.problems.extend(problems)
        for entry in entries:
            if entry.name in seen:
                catalog.problems.append(
                    Problem(
                        "duplicate-name",
                        f"kernel name {entry.name!r} is declared in {seen[entry.name]} too",
                        "give each KernelSpec a unique name",
                        file=entry.file,
                        line=entry.line,
                    )
                )
                continue
            seen[entry.name] = entry.file
            catalog.kernels.append(entry)
    cache.save()
    return catalog


class _ScanCache:
    """What `scan_module` found in each file, by the file's path and the hash of its bytes: the
    TUI paints its list only after discovery, and parsing is most of discovery's time (44 of
    86 ms for the library's 18 files). Only clean scans are kept (a missing import is the
    environment's, so it is looked for again); a cache that cannot be read or written is
    ignored."""

    VERSION = 2

    def __init__(self, path: Path, files: dict[str, dict]) -> None:
        self.path, self.files, self.changed = path, files, False

    @classmethod
    def load(cls) -> _ScanCache:
        home = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        path = Path(os.environ.get(SCAN_CACHE_ENV) or Path(home, "triton-workbench", "scan.json"))
        try:
            data = json.loads(path.read_text())
            files = data["files"] if data.get("version") == cls.VERSION else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            files = {}
        return cls(path, files if isinstance(files, dict) else {})

    def scan(self, path: Path) -> tuple[list[KernelEntry], list[Problem]]:
        try:
            digest = hashlib.sha1(path.read_bytes()).hexdigest()
        except OSError:
            return scan_module(path)  # which says why it cannot be read
        key = str(path)
        known = self.files.get(key)
        if isinstance(known, dict) and known.get("sha1") == digest:
            try:
                return [_entry_from(e) for e in known["entries"]], []
            except (KeyError, TypeError):
                pass  # written by another version: scan again
        entries, problems = scan_module(path)
        if not problems:
            self.files[key] = {"sha1": digest, "entries": [e.to_dict() for e in entries]}
            self.changed = True
        return entries, problems

    def save(self) -> None:
        if not self.changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            tmp.write_text(json.dumps({"version": self.VERSION, "files": self.files}))
            os.replace(tmp, self.path)
        except OSError:
            pass  # the next start parses again


def _entry_from(d: dict) -> KernelEntry:
    dtypes = d.get("dtypes")
    return KernelEntry(**{**d, "dtypes": tuple(dtypes) if dtypes is not None else None})


def scan_module(path: Path) -> tuple[list[KernelEntry], list[Problem]]:
    file = str(path)
    try:
        source = path.read_text()
    except OSError as exc:
        return [], [Problem("unreadable", f"cannot read {file}: {exc}", "check permissions")]
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as exc:
        cause = f"syntax error: {exc.msg}"
        return [], [Problem("syntax-error", cause, "fix the syntax", file=file, line=exc.lineno)]
    problems = list(_missing_imports(tree, path))
    if problems:
        return [], problems
    names = module_constants(tree)
    docs = {
        n.name: summary(ast.get_docstring(n, clean=False))
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    entries = [_entry(call, file, names, docs) for call in spec_calls(tree)]
    if not entries and _defines_three_names(tree):
        about = summary(ast.get_docstring(tree, clean=False))
        entries = [
            KernelEntry(name=path.stem, file=file, line=1, contract="three-name", description=about)
        ]
    return entries, []


def spec_calls(tree: ast.Module) -> Iterable[ast.Call]:
    """KernelSpec(...) calls outside function bodies, in source order."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call) and _callee(node) == "KernelSpec":
            yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def spec_keyword(tree: ast.Module, spec_name: str, key: str) -> ast.expr | None:
    """The expression given as `key=` to the KernelSpec named `spec_name`, as written."""
    names = module_constants(tree)
    for call in spec_calls(tree):
        if _spec_name(call, names) == spec_name:
            return _keywords(call, names).get(key)
    return None


def module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Names bound exactly once at module level, to the expression they are bound to: what a
    spec's fields may name in place of a literal (`SHAPES = {...}` then `shapes=SHAPES`)."""
    bound: dict[str, ast.expr] = {}
    rebound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            continue
        for target, value in pairs:
            if isinstance(target, ast.Name):
                if target.id in bound:
                    rebound.add(target.id)
                bound[target.id] = value
    return {k: v for k, v in bound.items() if k not in rebound}


def _keywords(call: ast.Call, names: dict[str, ast.expr]) -> dict[str, ast.expr]:
    """The call's keyword arguments, those spread from module-level dicts (`**SHARED`) included:
    twins declare what they share once."""
    out: dict[str, ast.expr] = {}
    for k in call.keywords:
        if k.arg:
            out[k.arg] = k.value
        else:
            out.update(_dict_fields(k.value, names, depth=0))
    return out


UNREAD = "**"
"""The key under which `_keywords` keeps a spread it cannot read: any field may be in it."""


def _dict_fields(node: ast.expr, names: dict[str, ast.expr], depth: int) -> dict[str, ast.expr]:
    """The string-keyed entries of a dict display, or of the module-level name bound to one,
    following `**OTHER` inside it; {UNREAD: node} when the source does not say."""
    if depth > 8:  # names bound to each other in a cycle
        return {UNREAD: node}
    if isinstance(node, ast.Name) and node.id in names:
        return _dict_fields(names[node.id], names, depth + 1)
    if not isinstance(node, ast.Dict):
        return {UNREAD: node}
    out: dict[str, ast.expr] = {}
    for k, v in zip(node.keys, node.values):
        if k is None:
            out.update(_dict_fields(v, names, depth + 1))
        elif isinstance(k, ast.Constant) and isinstance(k.value, str):
            out[k.value] = v
        else:
            out[UNREAD] = v
    return out


def _spec_name(call: ast.Call, names: dict[str, ast.expr]) -> object:
    named = _literal(_keywords(call, names).get("name"), names)
    return named or (_literal(call.args[0], names) if call.args else None)


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.LShift: operator.lshift,
    ast.Pow: operator.pow,
}


def _literal(node: ast.AST | None, names: dict[str, ast.expr]) -> object:
    """The value of a literal, allowing integer arithmetic such as `1 << 28` or `32 * 1024`,
    module-level names bound to literals, and `**` of such a name inside a dict."""
    try:
        return _evaluate(node, names) if node is not None else None
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
        return None


def _evaluate(node: ast.AST, names: dict[str, ast.expr]) -> Any:
    """The literal's value; an operation on values it does not apply to raises TypeError."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _evaluate(names[node.id], names)  # KeyError: not a module-level constant
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_evaluate(e, names) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            value = _evaluate(v, names)
            out.update(value if k is None else {_evaluate(k, names): value})
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, names)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _evaluate(node.left, names), _evaluate(node.right, names)
        huge = isinstance(node.op, (ast.Pow, ast.LShift)) and right > 64
        if isinstance(left, int) and isinstance(right, int) and not huge:
            return _OPS[type(node.op)](left, right)
    raise ValueError("not a literal")


def _entry(
    call: ast.Call, file: str, names: dict[str, ast.expr], docs: dict[str, str]
) -> KernelEntry:
    """`docs`: the docstring summaries of the module's functions, where kernel_fn's stands in
    for a description the spec does not give (as `KernelSpec` itself does)."""
    kw = _keywords(call, names)
    name = _spec_name(call, names)
    shapes = _literal(kw.get("shapes"), names)
    # a spec that leaves dtypes out has KernelSpec's default, unless a spread may hold them
    unsaid = "dtypes" not in kw and UNREAD not in kw
    dtypes = DTYPES if unsaid else _literal(kw.get("dtypes"), names)
    kernel_fn = kw.get("kernel_fn")
    own_doc = docs.get(kernel_fn.id, "") if isinstance(kernel_fn, ast.Name) else ""
    return KernelEntry(
        name=str(name) if name else f"<unnamed at line {call.lineno}>",
        file=file,
        line=call.lineno,
        kind=str(_literal(kw.get("kind"), names) or "kernel"),
        dtypes=tuple(dtypes) if isinstance(dtypes, (tuple, list)) else None,
        shapes=(
            {str(k): [list(s) for s in v] for k, v in shapes.items()}
            if isinstance(shapes, dict)
            else None
        ),
        description=str(_literal(kw.get("description"), names) or own_doc),
    )


def _defines_three_names(tree: ast.Module) -> bool:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return all(n in names for n in THREE_NAMES)


def _missing_imports(tree: ast.Module, path: Path) -> Iterable[Problem]:
    for node in tree.body:
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module]
        else:
            continue
        for mod in mods:
            top = mod.split(".")[0]
            if not _importable(top, str(path.parent)):
                yield Problem(
                    "missing-package",
                    f"imports {mod!r}, which is not installed",
                    f"pip install the package that provides {top!r}, or remove the import",
                    file=str(path),
                    line=node.lineno,
                )


@cache
def _importable(top: str, folder: str) -> bool:
    if top in sys.builtin_module_names or top in sys.stdlib_module_names:
        return True
    local = os.path.join(folder, top)
    if os.path.exists(local + ".py") or os.path.isdir(local):
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False
