"""Names shared by the profiled child and the parent: NVTX ranges, filters, Triton kernel names.

The child opens one push/pop range per config in the NVTX domain `workbench`, named
`<kernel>:<shape>[:<dtype>]`; the parent builds ncu's filter for exactly those names before the
child exists, so both sides derive them here. Kernel names come from the module's source (the
spec's `jit=` entries): a Triton kernel is named after its Python function.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from workbench.catalog.discovery import module_constants, spec_keyword

DOMAIN = "workbench"
_NVTX_SPECIAL = re.compile(r"([\\@,\[\]/*+])")


@dataclass(frozen=True)
class Config:
    shape: tuple[int, ...]
    dtype: str | None

    @property
    def label(self) -> str:
        shape = "x".join(map(str, self.shape)) or "inputs"
        return f"{shape}:{self.dtype}" if self.dtype else shape

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}


def range_name(kernel: str, config: Config) -> str:
    return f"{kernel}:{config.label}"


def nvtx_escape(name: str) -> str:
    """ncu's NVTX filter syntax gives `@ , [ ] / * +` a meaning; a backslash makes them plain."""
    return _NVTX_SPECIAL.sub(r"\\\1", name)


def nvtx_include(range_: str) -> str:
    """Filter for one push/pop range of our domain (a single level needs the trailing `/`)."""
    return f"{DOMAIN}@{nvtx_escape(range_)}/"


def kernel_regex(names: list[str]) -> str | None:
    """ncu `-k` value matching the Triton kernels by function name."""
    if not names:
        return None
    alts = "|".join(re.escape(n) for n in sorted(set(names)))
    return f"regex:^({alts})(_|$)"


def jit_kernel_names(file: str, spec_name: str) -> list[str]:
    """Function names of the spec's `jit=` entries, read from the source (imports nothing).

    Follows `name = triton.autotune(...)(fn)`-style assignments to the decorated function.
    Returns [] when the source does not say (then ncu is not filtered by kernel name).
    """
    try:
        tree = ast.parse(Path(file).read_text(), filename=file)
    except (OSError, SyntaxError, ValueError):
        return []
    defs = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    # a kernel imported under its own name from a sibling module (`as` would hide the function's)
    defs |= {
        a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names if not a.asname
    }
    assigns = module_constants(tree)
    jit_expr = spec_keyword(tree, spec_name, "jit")
    if not isinstance(jit_expr, (ast.Tuple, ast.List)):
        return []
    names: list[str] = []
    for elt in _entries(jit_expr):
        name = _resolve(elt, defs, assigns, depth=0)
        if name and name not in names:
            names.append(name)
    return names


def _entries(node: ast.AST) -> list[ast.AST]:
    """What a `jit=` tuple lists, through `*(...)` and both arms of `a if cond else b`: a kernel
    that runs only where the installed Triton has it (a Gluon one) is named all the same."""
    if isinstance(node, ast.Starred):
        return _entries(node.value)
    if isinstance(node, ast.IfExp):
        return _entries(node.body) + _entries(node.orelse)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [entry for elt in node.elts for entry in _entries(elt)]
    return [node]


def _resolve(node: ast.AST, defs: set[str], assigns: dict, depth: int) -> str | None:
    if depth > 8:
        return None
    if isinstance(node, ast.Name):
        if node.id in defs:
            return node.id
        if node.id in assigns:
            return _resolve(assigns[node.id], defs, assigns, depth + 1)
        return None
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):  # triton.autotune(...)(fn) or triton.jit(fn)
        for arg in node.args:
            found = _resolve(arg, defs, assigns, depth + 1)
            if found:
                return found
    return None
