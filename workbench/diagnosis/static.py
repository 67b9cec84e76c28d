"""Static findings: facts read from resources, IR text and kernel source, for the diagnosis.

Every detector is a pure function of text or numbers. Ids, thresholds and fixes are the pitfall
table's rows (`diagnosis.pitfalls`), those whose facts name `compile_findings`. The "ir" job kind
runs them on the compile's facts (`ir.facts`, through `diagnose_compile`); `diagnose` reads what
it found from `Facts.compile_findings`, under those rows (`compile_facts`).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import replace

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import SEVERITIES, Finding
from workbench.diagnosis.pitfalls import PITFALLS, fix_text, limit
from workbench.diagnosis.registry import detector
from workbench.ir.linemap import Key, StageMap
from workbench.ir.resources import Resources

PER_CONFIG = ("register-spill", "low-occupancy")
"""Findings whose figures differ per config: never merged across configs."""
OCCUPANCY_FLOOR = limit("low-occupancy", "floor")


# ---- resources -------------------------------------------------------------------------------


def spill_finding(res: Resources, config: str, where: Key | None = None) -> Finding | None:
    if res.spill_bytes <= 0:
        return None
    return Finding(
        id="register-spill",
        title=f"{res.spill_bytes} bytes/thread spilled to local memory ({res.regs} registers)",
        severity="high",
        evidence={
            "config": config,
            "arch": f"sm_{res.arch}",
            "regs": res.regs,
            "stack_bytes": res.stack_bytes,
            "local_bytes": res.local_bytes,
            "n_spills": res.n_spills,
            "num_warps": res.num_warps,
        },
        fix=fix_text("register-spill"),
        file=where[0] if where else None,
        line=where[1] if where else None,
    )


def tile_kernel(ir: str) -> bool:
    """A kernel that picks its occupancy by design: a tile of matrix products (tl.dot, or
    Gluon's wgmma and tcgen05 MMAs), or warps specialized into partitions on register budgets
    of their own."""
    return bool(_TILE_OPS.search(ir))


def occupancy_finding(
    res: Resources, config: str, where: Key | None = None, uses_dot: bool = False
) -> Finding | None:
    """Theoretical occupancy under the floor. A number, not a measurement of harm: "info" for a
    tl.dot tile kernel (one big tile per SM is its design; its pipeline, num_stages, hides the
    latency), "low" otherwise (worth measuring), "high" when the block cannot launch at all."""
    occ = res.occupancy
    if occ is None or occ.percent >= OCCUPANCY_FLOOR:
        return None
    severity = "high" if not occ.blocks_per_sm else "info" if uses_dot else "low"
    return Finding(
        id="low-occupancy",
        title=f"cannot launch on {occ.arch}: {occ.reason}"
        if occ.limiter == "launch"
        else f"theoretical occupancy {occ.percent:g}% ({occ.active_warps}/{occ.max_warps} "
        f"warps), limited by {occ.limiter}",
        severity=severity,
        evidence={
            "config": config,
            "arch": occ.arch,
            "percent": occ.percent,
            "limiter": occ.limiter,
            "block_limits": occ.block_limits,
            "regs": res.regs,
            "shared_bytes": res.shared_bytes,
            "num_warps": res.num_warps,
            "reason": occ.reason,
            "uses_dot": uses_dot,
        },
        fix=fix_text("low-occupancy", variant=occ.limiter),
        file=where[0] if where else None,
        line=where[1] if where else None,
    )


def among_candidates(found: list[Finding], candidates: dict[str, bool]) -> list[Finding]:
    """Per-config findings of an autotuner's candidates (label -> whether it can launch): one
    that some launchable candidate is free of is info, since the autotuner times them all and
    skips those that cannot launch; one that every launchable candidate has keeps its severity."""
    if len(candidates) < 2:
        return found
    launchable = {label for label, ok in candidates.items() if ok}
    out = []
    for f in found:
        label = f.evidence.get("config")
        if f.id not in PER_CONFIG or label not in candidates or f.severity == "info":
            out.append(f)
            continue
        having = {g.evidence.get("config") for g in found if g.id == f.id and g.severity != "info"}
        skipped = f.evidence.get("limiter") == "launch" and bool(launchable)
        if launchable <= having and not skipped:
            out.append(f)
            continue
        why = (
            f"one of {len(candidates)} autotune candidates, {len(launchable - having)} of them "
            "free of it: the autotuner times them all and skips those that cannot launch "
            "(`sweep` shows which one wins)"
        )
        out.append(replace(f, severity="info", evidence={**f.evidence, "why_info": why}))
    return out


# ---- TTIR ------------------------------------------------------------------------------------

_TILE_OPS = re.compile(
    r"\b(?:tt\.dot|ttng\.warp_group_dot|ttng\.tc_gen5_mma|ttg\.warp_specialize)\b"
)
_DOT = re.compile(
    r"\btt\.dot\s+(?P<ops>[^:]*):\s*tensor<(?P<a>[^>]*)>\s*\*\s*tensor<(?P<b>[^>]*)>"
    r"\s*->\s*tensor<(?P<c>[^>]*)>"
)
_PRECISION = re.compile(r"inputPrecision\s*=\s*(\w+)")
_ATOMIC = re.compile(r"\btt\.atomic_rmw\s+(\w+),")
_MEMOP = re.compile(r"\btt\.(load|store)\s+(?P<ops>[^:]*?)\s*:\s*(?P<ty>\S+)")
_DEFINES = re.compile(r"^\s*(%[\w.#]+)\s*=\s*(tt\.dot|arith\.subi|arith\.truncf)\b")
_TRUNC = re.compile(r"arith\.truncf\s+(%[\w.#]+)\s*:.*\bto\s+tensor<(?P<to>[^>]*)>")
_ADDF = re.compile(r"arith\.addf\s+(%[\w.#]+),\s*(%[\w.#]+)\s*:\s*tensor<(?P<ty>[^>]*)>")
_SIGNED_DIV = re.compile(r"\barith\.(divsi|remsi)\s+(%[\w.#]+)\s*,")
_INT_CONST = re.compile(r"^\s*(%[\w.#]+)\s*=\s*arith\.constant\s+(-?\d+)\s*:\s*i\d+")
_FOR_FROM = re.compile(r"\bscf\.for\s+(%[\w.#]+)\s*=\s*(%[\w.#]+)\s+to\s+\S+\s+step\s+(%[\w.#]+)")
_AT_LEAST = re.compile(
    r"^\s*(%[\w.#]+)\s*=\s*arith\.cmpi\s+(sgt|sge)\s*,\s*(%[\w.#]+)\s*,\s*(%[\w.#]+)"
)
_IF = re.compile(r"\bscf\.if\s+(%[\w.#]+)")
_SUBI = re.compile(r"^\s*(%[\w.#]+)\s*=\s*arith\.subi\s+(%[\w.#]+)\s*,\s*(%[\w.#]+)")


def _element(tensor_type: str) -> str:
    """'128x64xf16' or '128x64xf16, #blocked' -> 'f16'."""
    return tensor_type.split(",")[0].strip().split("x")[-1]


def _operands(text: str) -> list[str]:
    text = re.sub(r"\{.*\}", "", text)
    return [t.strip() for t in text.split(",") if t.strip().startswith("%")]


_LOOP_OPEN = re.compile(r"\bscf\.for\b")
_LOOP_CLOSE = re.compile(r"\bscf\.yield\b")
_EXP = re.compile(r"\bmath\.exp2?\b")
_PARTITIONED = re.compile(r"\bttg\.warp_specialize\b")


def serial_softmax_finding(ir: str, smap: StageMap, config: str, arch: int) -> Finding | None:
    """On sm_90, a loop body with a tt.dot, then an exp, then another tt.dot (attention's
    shape) in a kernel whose warps are not specialized: the exponentials wait for the first
    wgmma and the second waits for them, with nothing to overlap them on the tensor cores."""
    if arch != 90 or _PARTITIONED.search(ir):
        return None
    seen: list[str] | None = None  # what the loop body being read has met, in order
    for n, line in enumerate(ir.splitlines(), 1):
        if _LOOP_OPEN.search(line):
            seen = []
        elif _LOOP_CLOSE.search(line):
            seen = None  # after a body: the region around it is not known to loop
        elif seen is None:
            continue
        elif _DOT.search(line):
            if "exp" in seen and seen[0] == "dot":
                where = next((key for key, lines in smap.lines.items() if n in lines), None)
                return Finding(
                    id="serial-softmax",
                    title="a softmax between two tl.dot in one loop, nothing to overlap it "
                    "with the tensor cores",
                    severity="low",
                    evidence={"config": config, "arch": f"sm_{arch}", "ttir_line": n},
                    fix=fix_text("serial-softmax", {"line": where[1] if where else ""}),
                    file=where[0] if where else None,
                    line=where[1] if where else None,
                )
            seen.append("dot")
        elif _EXP.search(line) and seen:
            seen.append("exp")
    return None


def ir_findings(
    ttir: str, smap: StageMap, config: str, irregular: list[tuple[int, ...]]
) -> list[Finding]:
    """Patterns in TTIR: low-precision or IEEE dots, a dot's product summed in f16/bf16, float
    atomics, signed division of a difference, unmasked tensor accesses (reported only when the
    kernel's shape sets hold irregular shapes)."""
    where = {n: key for key, lines in smap.lines.items() for n in lines}
    found: list[Finding] = []
    defined: dict[str, list[str]] = {"tt.dot": [], "arith.subi": [], "arith.truncf": []}
    rounded_dots: set[str] = set()
    consts: dict[str, int] = {}
    least: dict[str, int] = {}  # a loop index counting up: its first value
    tests: dict[str, tuple[str, int]] = {}  # a condition `x > k` or `x >= k`: (x, least x)
    guards: list[tuple[int, str, int]] = []  # the `scf.if` regions we are in: (indent, x, least)
    non_negative: set[str] = set()  # `x - c` with c at most what x is known to be at least

    def add(n: int, id: str, title: str, severity: str, evidence: dict, fix: str) -> None:
        file, line = where.get(n, (None, None))
        evidence = {**evidence, "config": config, "ttir_line": n}
        found.append(Finding(id, title, severity, evidence, fix, file, line))

    for n, line in enumerate(ttir.splitlines(), 1):
        if m := _DEFINES.match(line):
            defined[m.group(2)].append(m.group(1))
        indent = len(line) - len(line.lstrip())
        while guards and indent <= guards[-1][0]:
            guards.pop()  # the region's `}` (or `} else {`) ends what its test told
        # names recur in a kernel's regions: each definition replaces what the last one said
        if m := _INT_CONST.match(line):
            consts[m.group(1)] = int(m.group(2))
        elif m := _FOR_FROM.search(line):
            start, step = consts.get(m.group(2)), consts.get(m.group(3), 0)
            if start is not None and step > 0:
                least[m.group(1)] = start
            else:
                least.pop(m.group(1), None)
        elif m := _AT_LEAST.match(line):
            if (k := consts.get(m.group(4))) is not None:
                tests[m.group(1)] = (m.group(3), k + (m.group(2) == "sgt"))
            else:
                tests.pop(m.group(1), None)
        elif (m := _IF.search(line)) and m.group(1) in tests:
            guards.append((indent, *tests[m.group(1)]))
        elif m := _SUBI.match(line):
            # (i - 1) % STAGES in a loop from 1, or under `if n > 0`: a pipeline's slot
            known = [k for _, x, k in guards if x == m.group(2)] + [least.get(m.group(2), -1)]
            if 0 <= consts.get(m.group(3), -1) <= max(known):
                non_negative.add(m.group(1))
            else:
                non_negative.discard(m.group(1))
        if (m := _TRUNC.search(line)) and m.group(1) in defined["tt.dot"]:
            rounded_dots.add(defined["arith.truncf"][-1])
        if (m := _ADDF.search(line)) and {m.group(1), m.group(2)} & rounded_dots:
            acc = _element(m.group("ty"))
            add(
                n,
                id="accumulating-low-precision",
                title=f"tl.dot's product is rounded to {acc} and summed in {acc}: the running "
                "sum is a low-precision accumulator",
                severity="high",
                evidence={"accumulator": acc, "ttir": "arith.truncf of tt.dot, then arith.addf"},
                fix=fix_text("accumulating-low-precision"),
            )
        if (
            (m := _SIGNED_DIV.search(line))
            and m.group(2) in defined["arith.subi"]
            and m.group(2) not in non_negative
        ):
            op = {"divsi": "//", "remsi": "%"}[m.group(1)]
            add(
                n,
                id="c-integer-division",
                title=f"{op} of a difference, which can be negative: Triton rounds toward zero",
                severity="info",
                evidence={"op": op, "ttir": f"arith.{m.group(1)}"},
                fix=fix_text("c-integer-division"),
            )
        elif m := _DOT.search(line):
            a, acc = _element(m.group("a")), _element(m.group("c"))
            precision = (_PRECISION.search(line) or ["", "ieee"])[1]
            if acc in ("f16", "bf16"):
                add(
                    n,
                    id="accumulating-low-precision",
                    title=f"tl.dot accumulates in {acc}",
                    severity="high",
                    evidence={"operand": a, "accumulator": acc},
                    fix=fix_text("accumulating-low-precision"),
                )
            if a == "f32" and precision.startswith("tf32"):
                add(
                    n,
                    id="tf32-mismatch",
                    title=f"fp32 tl.dot in {precision} (the default): about 1e-3 relative error "
                    "against an IEEE fp32 reference",
                    severity="info",
                    evidence={"operand": a, "input_precision": precision},
                    fix=fix_text("tf32-mismatch"),
                )
            if a == "f32" and precision == "ieee":
                add(
                    n,
                    id="fp32-dot-ieee",
                    title="fp32 tl.dot with input_precision='ieee' runs without tensor cores' "
                    "tf32 path",
                    severity="medium",
                    evidence={"operand": a, "input_precision": precision},
                    fix=fix_text("fp32-dot-ieee"),
                )
        elif (m := _ATOMIC.search(line)) and m.group(1) == "fadd":
            add(
                n,
                id="reduction-across-blocks",
                title="floating-point atomic add: the sum's order, and so its bits, vary per run",
                severity="medium",
                evidence={"op": "atomic_rmw fadd"},
                fix=fix_text("reduction-across-blocks"),
            )
        elif irregular and (m := _MEMOP.search(line)):
            op, ty = m.group(1), m.group("ty")
            if not ty.startswith("tensor<") or "boundaryCheck" in line:
                continue
            if len(_operands(m.group("ops"))) < (2 if op == "load" else 3):
                add(
                    n,
                    id="no-boundary-mask",
                    title=f"tl.{op} without a mask, and the shape sets include irregular sizes",
                    severity="medium",
                    evidence={"op": op, "irregular_shapes": [list(s) for s in irregular[:5]]},
                    fix=fix_text("no-boundary-mask", {"op": op}),
                )
    return found


# ---- Python source ---------------------------------------------------------------------------

_BLOCK_NAME = re.compile(r"(?i)(block|tile|_size$|^b[mnk]$|^group_)")
NOT_A_SIZE = {"ptr", "ptrs", "pointer", "stride", "start", "offset", "offsets", "idx", "index"}
"""Words that make a block- or tile-named parameter something else: `tile_row_start_ptr` is a
pointer to per-tile data, `block_start` an offset; neither is a size to make constexpr."""
SYNC_METHODS = ("item", "cpu", "tolist", "numpy", "synchronize")


def _parse(source: str) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None


def constexpr_findings(source: str, file: str, first_line: int) -> list[Finding]:
    """Tile-size parameters of a @triton.jit function that are not tl.constexpr."""
    tree = _parse(source)
    func = (
        next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None) if tree else None
    )
    if func is None:
        return []
    found = []
    for arg in func.args.args:
        note = arg.annotation
        if isinstance(note, ast.Constant) and isinstance(note.value, str):
            note = note.value  # a string annotation: "tl.constexpr"
        note = ast.unparse(note) if isinstance(note, ast.AST) else str(note or "")
        words = set(arg.arg.lower().split("_"))
        if (
            _BLOCK_NAME.search(arg.arg)
            and not words & NOT_A_SIZE
            and not note.endswith("constexpr")
        ):
            found.append(
                Finding(
                    id="forgot-constexpr",
                    title=f"tile size {arg.arg} is a runtime argument, not tl.constexpr",
                    severity="medium",
                    evidence={"parameter": arg.arg, "function": func.name},
                    fix=fix_text("forgot-constexpr", {"parameter": arg.arg}),
                    file=file,
                    line=first_line + arg.lineno - 1,
                )
            )
    return found


def host_sync_findings(
    sources: Iterable[tuple[str, str, int]], is_sync: Callable[[str], bool] | None = None
) -> list[Finding]:
    """`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `synchronize()` in launch wrappers, given
    as (source, file, first line) each: every one makes the host wait for the GPU."""
    is_sync = is_sync or (lambda name: name in SYNC_METHODS)
    found = []
    for source, file, first_line in sources:
        tree = _parse(source)
        for node in ast.walk(tree) if tree else ():
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and is_sync(node.func.attr)
            ):
                found.append(
                    Finding(
                        id="host-sync",
                        title=f"{ast.unparse(node)} in the launch wrapper waits for the GPU",
                        severity="medium",
                        evidence={"call": ast.unparse(node)},
                        fix=fix_text("host-sync"),
                        file=file,
                        line=first_line + node.lineno - 1,
                    )
                )
    return sorted(found, key=lambda f: (f.file or "", f.line or 0))


Access = tuple[int, int, str, bool, int]
"""(first line, last line, pointer text, masked, line of the enclosing def)."""


def _accesses(source: str) -> list[Access]:
    """Every tl.load / tl.store call, with the function it is in."""
    tree = _parse(source)
    out = []
    for func in ast.walk(tree) if tree else ():
        if not isinstance(func, ast.FunctionDef):
            continue
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("load", "store")
                and node.args
            ):
                # the mask's position: tl.load(ptr, mask), tl.store(ptr, value, mask)
                mask_at = 1 if node.func.attr == "load" else 2
                masked = len(node.args) > mask_at or any(k.arg == "mask" for k in node.keywords)
                last = node.end_lineno or node.lineno
                out.append((node.lineno, last, ast.unparse(node.args[0]), masked, func.lineno))
    return out


def drop_guarded(found: list[Finding], read: Callable[[str], str]) -> list[Finding]:
    """Drop no-boundary-mask findings on an access whose pointer the same function also reaches
    with a mask: the split loop of full tiles unmasked and the last tile masked, on purpose (a
    masked twin elsewhere in the file guards nothing)."""
    accesses: dict[str, list[Access]] = {}
    kept = []
    for f in found:
        if f.id == "no-boundary-mask" and f.file and f.line:
            if f.file not in accesses:
                try:
                    accesses[f.file] = _accesses(read(f.file))
                except OSError:
                    accesses[f.file] = []
            at = [a for a in accesses[f.file] if a[0] <= f.line <= a[1] and not a[3]]
            here = {a[2] for a in at}
            funcs = {a[4] for a in at}
            guarded = {a[2] for a in accesses[f.file] if a[3] and a[4] in funcs}
            if here and here <= guarded:
                continue
        kept.append(f)
    return kept


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (id, file, line) (per config too for resource findings); the configs
    an IR or source finding was seen in are gathered under evidence["configs"]."""
    out: dict[tuple, Finding] = {}
    for f in findings:
        own = f.id in PER_CONFIG or f.line is None
        key = (f.id, f.file, f.line, f.evidence.get("config") if own else None)
        if key not in out:
            out[key] = f
            continue
        configs = out[key].evidence.setdefault("configs", [out[key].evidence.get("config")])
        if f.evidence.get("config") not in configs:
            configs.append(f.evidence.get("config"))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out.values(), key=lambda f: (order.get(f.severity, 9), f.id, f.line or 0))


@detector(*(p.id for p in PITFALLS if "compile_findings" in p.facts))
def compile_facts(facts: Facts) -> list[Finding]:
    """What the "ir" job found in the compile (`diagnose_compile`), as the diagnosis's facts:
    registered under every row that reads `compile_findings`."""
    return [replace(f, evidence={**f.evidence, "source": "static"}) for f in facts.compile_findings]
