"""The IR stage of the "ir" job (child process): compile each launch of a kernel for a GPU arch,
write every stage, map Python lines through them and read resources; the result and the facts
the diagnosis reads (`ir.facts`: it runs above, in `diagnosis.ir_job`).

On a GPU host (no --arch, or the device's own) kernels compile through `warmup` and are loaded,
so the driver's n_regs/n_spills can be set beside the static figures (and beside a cross-compile
of the same launch). Without a GPU, `triton.compile` cross-compiles for the chosen arch.
"""

from __future__ import annotations

import inspect
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.catalog.spec import KernelSpec
from workbench.ir import disasm, resources
from workbench.ir.capture import Launch, capture, compile_mode
from workbench.ir.config import OPTION_NAMES, label, matches
from workbench.ir.facts import Compiled, CompileFacts, Source, irregular_shapes
from workbench.ir.linemap import STAGES, SourceMap
from workbench.ir.occupancy import DEFAULT_ARCH
from workbench.ir.result import IrResult, IrVariant
from workbench.run.faults import problem_from_exception
from workbench.run.params import IrParams
from workbench.runtime import compat
from workbench.runtime.errors import Problem, WorkbenchError, fail
from workbench.runtime.grammar import parse_settings
from workbench.runtime.outdir import OutDir

TEXT_STAGES = ("ttir", "ttgir", "llir", "ptx")


def compile_kernel(spec: KernelSpec, params: IrParams, ctx: Any) -> tuple[IrResult, CompileFacts]:
    """The ir job's result, its findings not made yet, and the facts they are made from."""
    compat.require_supported()
    import triton

    spec = compile_mode(spec, ctx.file)
    gpu = ctx.device.startswith("cuda")
    device_arch = compat.device_arch() if gpu else None
    arch = params.arch or device_arch or DEFAULT_ARCH
    on_device = gpu and arch == device_arch
    out_dir = Path(params.out or ctx.run_dir)
    out = OutDir(out_dir, "--out")
    stages = [s for s in params.stages or STAGES if s in STAGES]
    shape = tuple(params.shape) if params.shape else None
    variants = _variants(capture(spec, ctx.device, params.dtype, shape), arch)
    chosen = _select(variants, params.configs, arch)
    shapes = _check_shapes(spec)
    results: list[dict] = []
    compiled: list[Compiled] = []
    for i, variant in enumerate(chosen):
        ctx.emit({"event": "progress", "done": i, "total": len(chosen), "case": variant["label"]})
        folder = f"{i}_{variant['launch'].name}"
        result, facts = _build(variant, arch, on_device, out, folder, stages, params.cross_check)
        results.append(result)
        compiled += [facts] if facts else []
        ctx.emit({"event": "variant", "variant": {k: result[k] for k in ("label", "error")}})
    ctx.emit({"event": "progress", "done": len(chosen), "total": len(chosen), "case": ""})
    launches = [v["launch"] for v in chosen]
    result = IrResult(
        kernel=spec.name,
        mode="gpu" if on_device else "cross-compile",
        arch=f"sm_{arch}",
        triton_version=triton.__version__,
        out_dir=str(out_dir),
        stages=stages,
        line_info=not compat.line_info_disabled(),
        irregular_shapes=[list(s) for s in irregular_shapes(shapes)],
        variants=[IrVariant(**r) for r in results],
    )
    facts = CompileFacts(
        compiled, _kernel_sources(launches), _wrapper_sources(spec.kernel_fn), shapes
    )
    return result, facts


def _variants(launches: list[Launch], arch: int) -> list[dict]:
    """Distinct compiles, in launch order, each with its label and parsed options."""
    target = compat.gpu_target(arch)
    seen: dict[str, dict] = {}
    names = {launch.name for launch in launches}
    for launch in launches:
        options, signature, constexprs, attrs = compat.bind_launch(
            launch.fn, target, launch.args, launch.kwargs
        )
        key = repr((id(launch.fn), signature, constexprs, attrs, sorted(vars(options).items())))
        if key in seen:
            continue
        values = {**launch.constexprs(), **_options(options)}
        text = label(values)
        seen[key] = {
            "launch": launch,
            "values": values,
            "label": f"{launch.name}:{text}" if len(names) > 1 else text,
            "derived": False,
        }
    return list(seen.values())


def _options(options: Any) -> dict[str, Any]:
    """num_warps and num_stages always; num_ctas and maxnreg when set away from the default."""
    values = {k: getattr(options, k, None) for k in OPTION_NAMES}
    return {
        k: v
        for k, v in values.items()
        if k in ("num_warps", "num_stages") or (v is not None and not (k == "num_ctas" and v == 1))
    }


def _select(variants: list[dict], selectors: list[str], arch: int) -> list[dict]:
    """All variants, or per selector: the first that matches it, else the first variant with
    those values put in (a config the kernel does not list). "" selects the first variant."""
    if not selectors:
        return variants
    chosen = []
    for text in selectors:
        wanted = parse_settings(text)
        hit = next((v for v in variants if matches(v["values"], wanted)), None)
        if hit is None:
            hit = _derive(variants[0], wanted, arch)
        chosen.append(hit)
    return chosen


def _derive(base: dict, wanted: dict[str, Any], arch: int) -> dict:
    launch: Launch = base["launch"]
    known = [p.name for p in launch.fn.params if p.is_constexpr] + list(OPTION_NAMES)
    unknown = [k for k in wanted if k not in known]
    if unknown:
        raise fail(
            "bad-config",
            f"{', '.join(unknown)} is neither a tl.constexpr parameter of {launch.name} nor a "
            "compile option",
            f"use keys among: {', '.join(known)}",
        )
    variant = _variants([launch.with_values(wanted)], arch)[0]
    variant["derived"] = True
    return variant


def _build(
    variant: dict,
    arch: int,
    on_device: bool,
    out: OutDir,
    folder: str,
    stages: list[str],
    cross_check: bool,
) -> tuple[dict, Compiled | None]:
    """The variant's result, and what the diagnosis reads of it (None when it did not compile)."""
    launch: Launch = variant["launch"]
    file, def_line = _where(launch.fn)
    result: dict[str, Any] = {
        "label": variant["label"],
        "function": launch.name,
        "derived": variant["derived"],
        "file": file,
        "def_line": def_line,
        "values": {k: _jsonable(v) for k, v in variant["values"].items()},
        "artifacts": {},
        "line_counts": {},
        "sourcemap": {},
        "resources": None,
        "device": None,
        "cross_check": None,
        "timings": {},
        "error": None,
    }
    facts = None
    try:
        start = time.perf_counter()
        if on_device:
            kernel = compat.warmup(launch.fn, launch.args, launch.kwargs)
        else:
            kernel = compat.cross_compile(launch.fn, arch, launch.args, launch.kwargs)
        result["timings"]["compile_s"] = round(time.perf_counter() - start, 3)
        result["hash"] = kernel.hash
        source = source_stage(kernel)
        texts = _write_artifacts(kernel, out, folder, stages, result)
        res = disasm.kernel_resources(kernel, arch, result["artifacts"]["cubin"])
        result["resources"] = res.to_dict()
        if on_device:
            result["device"] = resources.agreement(res, int(kernel.n_regs), int(kernel.n_spills))
            if cross_check:
                result["cross_check"] = _cross_check(launch, arch, kernel.hash, res, out, folder)
        start = time.perf_counter()
        smap = SourceMap.build(texts)
        result["sourcemap"] = smap.to_dict()
        result["timings"]["sourcemap_s"] = round(time.perf_counter() - start, 3)
        facts = Compiled(
            variant["label"],
            (file, def_line),
            res,
            texts[source],
            smap.stages[source],
            variant["values"],
            tuned=variant["launch"].tuned,
        )
    except WorkbenchError as exc:
        result["error"] = exc.problem.to_dict()
    except Exception as exc:  # noqa: BLE001 - one config failing leaves the others' results
        result["error"] = _compile_problem(exc, variant).to_dict()
    return result, facts


def source_stage(kernel: Any) -> str:
    """The first IR of a compile, which the findings read: TTIR, or TTGIR for a Gluon kernel
    (its layouts are its author's: it enters the compiler there and has no TTIR)."""
    return "ttir" if "ttir" in kernel.asm else "ttgir"


def _write_artifacts(
    kernel: Any, out: OutDir, folder: str, stages: list[str], result: dict
) -> dict[str, str]:
    """Write cubin and the chosen stages the compile has into `folder` of `out`; return the
    texts to map (its source stage always, for findings)."""
    name = kernel.metadata.name
    cubin = out.put(f"{folder}/{name}.cubin", kernel.asm["cubin"])
    result["artifacts"]["cubin"] = str(cubin)
    texts: dict[str, str] = {}
    source = source_stage(kernel)
    for stage in TEXT_STAGES:
        if stage in kernel.asm and (stage in stages or stage == source):
            texts[stage] = kernel.asm[stage]
    if "sass" in stages:
        start = time.perf_counter()
        texts["sass"] = disasm.sass(str(cubin))
        result["timings"]["sass_s"] = round(time.perf_counter() - start, 3)
    for stage, text in texts.items():
        path = out.put(f"{folder}/{name}.{stage}", text)
        result["artifacts"][stage] = str(path)
        result["line_counts"][stage] = text.count("\n")
    return texts


def _cross_check(
    launch: Launch, arch: int, device_hash: str, res: resources.Resources, out: OutDir, folder: str
) -> dict:
    """Cross-compile the same launch for the device's arch: same hash, same resources?"""
    start = time.perf_counter()
    kernel = compat.cross_compile(launch.fn, arch, launch.args, launch.kwargs)
    seconds = round(time.perf_counter() - start, 3)
    cubin = out.put(f"{folder}/{kernel.metadata.name}.cross.cubin", kernel.asm["cubin"])
    cross = disasm.kernel_resources(kernel, arch, str(cubin))
    return {
        "same_hash": kernel.hash == device_hash,
        "regs": cross.regs,
        "spill_bytes": cross.spill_bytes,
        "shared_bytes": cross.shared_bytes,
        "same_resources": (cross.regs, cross.spill_bytes, cross.shared_bytes)
        == (res.regs, res.spill_bytes, res.shared_bytes),
        "compile_s": seconds,
    }


def _compile_problem(exc: Exception, variant: dict) -> Problem:
    problem = problem_from_exception(exc)
    if variant["derived"] and problem.source == "user-code":  # the values came from --config
        return replace(
            problem,
            cause=f"--config {variant['label']}: {problem.cause}",
            remedy="the kernel does not accept these values: choose others with --config "
            "(`ir NAME` without --config lists the configs the kernel uses)",
            source="usage",
        )
    text = f"{type(exc).__name__}: {exc}"
    if "OutOfResources" in type(exc).__name__ or "out of resource" in text:
        return Problem(
            "out-of-resources",
            f"the config does not fit the arch: {exc}",
            "use a smaller tile or fewer num_stages (shared memory), or fewer registers",
        )
    if "PTXAS" in type(exc).__name__.upper():
        return Problem("ptxas-error", f"ptxas failed: {str(exc)[:400]}", "see detail", detail=text)
    if problem.kind != "exception":
        return problem
    return Problem(
        "compile-error", text[:500], "fix the kernel source at the line shown", detail=text
    )


def _where(fn: Any) -> tuple[str, int]:
    """The kernel's file and the line of its `def`."""
    lines, start = inspect.getsourcelines(fn.fn)
    offset = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
    return inspect.getsourcefile(fn.fn) or "", start + offset


def _jsonable(v: Any) -> Any:
    v = v.value if hasattr(v, "value") else v
    return v if isinstance(v, (int, float, bool, str, type(None))) else str(v)


def _check_shapes(spec: KernelSpec) -> list[tuple[int, ...]]:
    return [tuple(s) for name in spec.shapes if name != "bench" for s in spec.shape_set(name)]


def _kernel_sources(launches: list[Launch]) -> list[Source]:
    """(source, file, first line) of each distinct @triton.jit function launched."""
    out = []
    for fn in {id(launch.fn): launch.fn for launch in launches}.values():
        lines, start = inspect.getsourcelines(fn.fn)
        out.append(("".join(lines), _where(fn)[0], start))
    return out


def _wrapper_sources(fn: Any) -> list[Source]:
    """kernel_fn's source and that of the module-level functions it calls by name."""
    out: list[Source] = []
    queue, seen = [fn], set()
    while queue and len(out) < 8:
        f = queue.pop(0)
        if id(f) in seen or not inspect.isfunction(f):
            continue
        seen.add(id(f))
        try:
            lines, start = inspect.getsourcelines(f)
        except (OSError, TypeError):
            continue
        source = "".join(lines)
        out.append((source, inspect.getsourcefile(f) or "", start))
        called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", source))
        queue += [f.__globals__[n] for n in called if inspect.isfunction(f.__globals__.get(n))]
    return out
