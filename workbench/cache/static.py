"""Static checks of `@triton.autotune` decorators against their kernel's signature (pure: reads
the source with `ast`, so it also works where importing the module fails, as 3.9 makes it).
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.cache import keys
from workbench.diagnosis.finding import Finding

NAME_LISTS = ("key", "reset_to_zero", "restore_value")


@dataclass
class Tuner:
    """One `triton.autotune(...)` in a file and the kernel it wraps."""

    kernel: str
    line: int
    params: list[str]
    constexprs: list[str]
    lists: dict[str, list[str]] = field(default_factory=dict)
    global_constexprs: list[str] = field(default_factory=list)
    """Module-level `NAME = tl.constexpr(...)` values the kernel reads."""
    loop_bounds: list[str] = field(default_factory=list)
    """Arguments that set how many times a loop of the kernel runs (`loop_bounds`)."""

    def to_dict(self) -> dict:
        return asdict(self)


def tuners(source: str) -> list[Tuner]:
    tree = ast.parse(source)
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    globals_ = _global_constexprs(tree)
    tuned = _config_names(tree)
    found: list[Tuner] = []
    for node in ast.walk(tree):
        call, target = None, None
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if _is_autotune(dec):
                    call, target = dec, node
        elif isinstance(node, ast.Call) and _is_autotune(node.func) and node.args:
            arg = node.args[0]  # autotune(...)(kernel)
            if isinstance(arg, ast.Name) and arg.id in defs:
                call, target = node.func, defs[arg.id]
        if call is None or target is None:
            continue
        assert isinstance(call, ast.Call)
        params = [a.arg for a in target.args.args + target.args.kwonlyargs]
        lists = {k.arg: _strings(k.value) for k in call.keywords if k.arg in NAME_LISTS}
        constexprs = [a.arg for a in target.args.args if _is_constexpr(a.annotation)]
        knobs = (set(constexprs) | tuned) - set(lists.get("key") or [])
        used = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        found.append(
            Tuner(
                kernel=target.name,
                line=call.lineno,
                params=params,
                constexprs=constexprs,
                lists={k: v for k, v in lists.items() if v is not None},
                global_constexprs=sorted(used & globals_),
                loop_bounds=[p for p in loop_bounds(target, knobs) if p in params],
            )
        )
    return found


LOOPS = ("range", "static_range")
"""`range`, `tl.range` and `tl.static_range`: the loops whose trip count a config is tuned for."""
GRID = ("program_id", "num_programs")


def loop_bounds(fn: ast.FunctionDef, knobs: set[str]) -> list[str]:
    """The names the trip count of a tiled loop grows with: a loop that steps (or divides its
    length) by a block size a config may set (`knobs`), as a reduction over K by BLOCK_K does.
    Its start and stop are followed through the kernel's own assignments (`num_k = tl.cdiv(K,
    BK)`), keeping the size of a `cdiv(size, block)` or `size // block` and not the block. A
    grid-stride loop (its start a program id) is left out: its length is the rows per program,
    which the config does not tile."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(node.value)

    def names(expr: ast.AST, sizes: list[str], blocks: list[str], seen: set[str]) -> None:
        if isinstance(expr, ast.Name):
            if expr.id not in seen:
                seen.add(expr.id)
                sizes.append(expr.id)
                for value in assigned.get(expr.id, []):
                    names(value, sizes, blocks, seen)
        elif isinstance(expr, ast.Call) and _called(expr) in GRID:
            sizes.append(GRID[0])
        elif isinstance(expr, ast.Call) and _called(expr) == "cdiv" and len(expr.args) == 2:
            names(expr.args[0], sizes, blocks, seen)
            names(expr.args[1], blocks, blocks, seen)
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.FloorDiv):
            names(expr.left, sizes, blocks, seen)
            names(expr.right, blocks, blocks, seen)
        else:
            for child in ast.iter_child_nodes(expr):
                names(child, sizes, blocks, seen)

    found: list[str] = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)):
            continue
        if _called(node.iter) not in LOOPS or not node.iter.args:
            continue
        args = node.iter.args
        sizes: list[str] = []
        blocks: list[str] = []
        seen: set[str] = set()
        for bound in args[:2] if len(args) > 1 else args:
            names(bound, sizes, blocks, seen)
        if len(args) > 2:
            names(args[2], blocks, blocks, seen)
        if any(n in GRID for n in sizes + blocks) or not knobs & set(blocks):
            continue
        found += [n for n in sizes if n not in found]
    return found


def _called(call: ast.Call) -> str | None:
    return getattr(call.func, "attr", None) or getattr(call.func, "id", None)


def _config_names(tree: ast.Module) -> set[str]:
    """The names the file's `triton.Config({...})` literals set: what a config decides."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "Config" and node.args:
            if isinstance(node.args[0], ast.Dict):
                keys = node.args[0].keys
                names |= {
                    k.value
                    for k in keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
    return names


def findings(source: str, file: str, triton_version: str | None) -> list[Finding]:
    """Findings 3 (names that are not arguments) and 5 (what the key does not see)."""
    out: list[Finding] = []
    version = keys.version_tuple(triton_version) if triton_version else None
    for t in tuners(source):
        for which, names in t.lists.items():
            unknown = [n for n in names if n not in t.params]
            if unknown:
                out.append(_unknown_names(t, which, unknown, file, version))
        key = t.lists.get("key", [])
        unseen = [p for p in t.loop_bounds if p not in key]
        if unseen:
            out.append(
                finding(
                    "autotune-key-misses-loop-bound",
                    "medium",
                    f"{t.kernel}: key= leaves out {', '.join(unseen)}, which set how long its "
                    "loop runs: a config tuned at one length is reused at every other",
                    f"key={key}; loop trip count grows with {', '.join(t.loop_bounds)}",
                    f"add {', '.join(unseen)} to key= (the best BLOCK and num_stages follow the "
                    "loop's length; `cache verify NAME` on a GPU measures the cost)",
                    file=file,
                    line=t.line,
                )
            )
        passed = [
            p
            for p in t.params
            if p not in key and p not in t.constexprs and not p.endswith("ptr") and p not in unseen
        ]
        if passed:
            out.append(
                finding(
                    "autotune-non-key-args",
                    "info",
                    f"{t.kernel}: a change in {', '.join(passed)} reuses the tuning made for "
                    "other values (they are not in key)",
                    f"key={key}; runtime arguments besides pointers: {', '.join(passed)}",
                    f"add to key= any of {', '.join(passed)} whose value changes the best config "
                    f"(`cache verify NAME` on a GPU measures it)",
                    file=file,
                    line=t.line,
                )
            )
        if t.global_constexprs and version and version < keys.GLOBAL_CONSTEXPR_IN_KEY:
            names = ", ".join(t.global_constexprs)
            out.append(
                finding(
                    "global-constexpr-not-in-key",
                    "medium",
                    f"{t.kernel} reads global constexpr {names}: on Triton {triton_version} an "
                    "edit of its value keeps the old compiled kernel",
                    "Triton < 3.5 leaves global tl.constexpr values out of JITFunction.cache_key",
                    "clear this kernel's cache after editing them (`cache clear NAME --yes`), "
                    "pass them as constexpr arguments, or upgrade to Triton >= 3.5",
                    file=file,
                    line=t.line,
                )
            )
    return out


def _unknown_names(t: Tuner, which: str, unknown: list[str], file: str, version) -> Finding:
    raises = version is not None and version >= keys.UNKNOWN_KEY_NAMES_RAISE
    effect = (
        "Triton 3.9 refuses to import it (ValueError)"
        if raises
        else "Triton up to 3.8 drops them silently: the kernel never re-tunes when they change"
    )
    return finding(
        "autotune-unknown-name",
        "high",
        f"{t.kernel}: {which}= names {', '.join(unknown)}, which are not arguments",
        f"{effect}; arguments are {', '.join(t.params)}",
        f"spell them as arguments of {t.kernel} (e.g. {', '.join(_closest(unknown, t.params))})",
        file=file,
        line=t.line,
    )


def finding(
    id_: str,
    severity: str,
    title: str,
    detail: str,
    fix: str,
    file: str | None = None,
    line: int | None = None,
    **removal: Any,
) -> Finding:
    """A cache finding: its `detail` and, for `cache clear`, what carrying out the fix removes
    (`remove`: paths under the cache root, their `bytes`, and `stale`: taken by
    `--stale-only`) as its evidence."""
    return Finding(id_, title, severity, {"detail": detail, **removal}, fix, file, line)


def _closest(names: list[str], params: list[str]) -> list[str]:
    import difflib

    lower = {p.lower(): p for p in params}
    return [
        lower.get(n.lower()) or (difflib.get_close_matches(n, params, n=1) or ["?"])[0]
        for n in names
    ]


def _is_autotune(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    name = getattr(func, "attr", None) or getattr(func, "id", None)
    return name == "autotune"


def _strings(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        return [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return None


def _is_constexpr(annotation: ast.AST | None) -> bool:
    return annotation is not None and "constexpr" in ast.unparse(annotation)


def _global_constexprs(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if "constexpr" in ast.unparse(node.value.func):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names
