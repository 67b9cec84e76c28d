"""Static checks of `@triton.autotune` decorators against their kernel's signature (pure: reads
the source with `ast`, so it also works where importing the module fails, as 3.9 makes it).
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field

from workbench.cache import keys

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

    def to_dict(self) -> dict:
        return asdict(self)


def tuners(source: str) -> list[Tuner]:
    tree = ast.parse(source)
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    globals_ = _global_constexprs(tree)
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
        used = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        found.append(
            Tuner(
                kernel=target.name,
                line=call.lineno,
                params=params,
                constexprs=[a.arg for a in target.args.args if _is_constexpr(a.annotation)],
                lists={k: v for k, v in lists.items() if v is not None},
                global_constexprs=sorted(used & globals_),
            )
        )
    return found


def findings(source: str, file: str, triton_version: str | None) -> list[dict]:
    """Findings 3 (names that are not arguments) and 5 (what the key does not see)."""
    out: list[dict] = []
    version = keys.version_tuple(triton_version) if triton_version else None
    for t in tuners(source):
        for which, names in t.lists.items():
            unknown = [n for n in names if n not in t.params]
            if unknown:
                out.append(_unknown_names(t, which, unknown, file, version))
        key = t.lists.get("key", [])
        passed = [
            p for p in t.params if p not in key and p not in t.constexprs and not p.endswith("ptr")
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
                    "warning",
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


def _unknown_names(t: Tuner, which: str, unknown: list[str], file: str, version) -> dict:
    raises = version is not None and version >= keys.UNKNOWN_KEY_NAMES_RAISE
    effect = (
        "Triton 3.9 refuses to import it (ValueError)"
        if raises
        else "Triton up to 3.8 drops them silently: the kernel never re-tunes when they change"
    )
    return finding(
        "autotune-unknown-name",
        "error",
        f"{t.kernel}: {which}= names {', '.join(unknown)}, which are not arguments",
        f"{effect}; arguments are {', '.join(t.params)}",
        f"spell them as arguments of {t.kernel} (e.g. {', '.join(_closest(unknown, t.params))})",
        file=file,
        line=t.line,
    )


def finding(id_: str, severity: str, title: str, evidence: str, fix: str, **extra) -> dict:
    base = {"id": id_, "severity": severity, "title": title, "evidence": evidence, "fix": fix}
    return {**base, **extra}


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
