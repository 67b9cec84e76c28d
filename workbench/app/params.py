"""One parameter builder per command: the options a person gave (flags or the app's selection)
checked and turned into the job's typed parameters. A bad option is refused here, before any
job starts, with its cause and remedy."""

from __future__ import annotations

import os

from workbench.catalog.discovery import KernelEntry
from workbench.loop.gather import Options
from workbench.profilers.session import Request
from workbench.run.params import BenchParams, CheckParams, IrParams, SweepParams
from workbench.runtime.errors import fail
from workbench.runtime.grammar import parse_settings
from workbench.sweep import spread
from workbench.sweep.space import SPACES
from workbench.sweep.strategy import STRATEGIES, parse_budget


def check_params(
    entry: KernelEntry, dtypes: list[str] | None, shape_sets: list[str] | None
) -> CheckParams:
    """Shape sets the source names are checked here, before a child spends seconds importing
    torch (sets the source does not spell out literally are the child's to check)."""
    known = entry.shapes
    unknown = [s for s in shape_sets or [] if known is not None and s not in known]
    if known is not None and unknown:
        raise fail(
            "unknown-shape-set",
            f"--shapes {unknown[0]}: {entry.name} has no shape set {unknown[0]!r}",
            f"use one of: {', '.join(known)}",
            source="usage",
        )
    return CheckParams(dtypes or None, shape_sets or None)


def ir_params(
    configs: list[str],
    stages: list[str],
    *,
    arch: int | None,
    dtype: str | None,
    shape: list[int] | None,
    out: str | None = None,
    cross_check: bool = False,
) -> IrParams:
    """`ir` (every stage) and `resources` (TTIR, with the GPU launch cross-checked): a malformed
    config selector fails here, before any compile."""
    for text in configs:
        parse_settings(text, "config")
    return IrParams(arch, configs, stages, dtype, shape, out, cross_check)


def sweep_params(
    name: str,
    *,
    space: str = "own",
    strategy: str | None = None,
    budget: str | None = None,
    seed: int = 0,
    seeds: int | None = None,
    shapes: list[list[int]] | None = None,
    dtype: str | None = None,
    jobs: int | None = None,
    arch: int | None = None,
    resume: bool = False,
    config_timeout: float = 120.0,
    triton_pick: bool = True,
) -> SweepParams:
    """A live sweep of kernel `name`; --space names a space or a file, made absolute here (the
    workers run elsewhere)."""
    named = space in SPACES
    where = space if named else os.path.abspath(space)
    if not named and not os.path.isfile(where):  # before any worker starts
        raise fail(
            "bad-arguments",
            f"--space {space}: no such file, and not one of {', '.join(SPACES)}",
            f"name a JSON or K=V,... file of configs, or use --space {'|'.join(SPACES)}",
            source="usage",
        )
    picked = strategy or "exhaustive"
    if picked not in STRATEGIES:
        raise fail(
            "bad-arguments",
            f"--strategy {strategy}: not one of {', '.join(STRATEGIES)}",
            f"pick one of {'|'.join(STRATEGIES)} (a sweep replay takes several or all)",
            source="usage",
        )
    if budget and picked == "exhaustive":  # the exhaustive sweep times every config
        raise fail(
            "bad-arguments",
            "--budget bounds a search strategy, and an exhaustive sweep times every config",
            "add --strategy random|coordinate|halving, or leave --budget out",
            source="usage",
        )
    if seeds is not None:
        raise fail(
            "bad-arguments",
            "--seeds is for `sweep replay`",
            "give a live sweep one --seed",
            source="usage",
        )
    return SweepParams(
        strategy=picked,
        budget=parse_budget(budget).to_dict() if budget else None,
        seed=seed,
        shapes=shapes or [],
        dtype=dtype,
        space=where,
        jobs=jobs,
        arch=arch,
        resume=spread.resume_file(name) if resume else None,
        config_timeout=config_timeout,
        triton_pick=triton_pick,
    )


def bench_params(
    shapes: list[list[int]] | None,
    dtypes: list[str] | None,
    *,
    compile: bool = True,
    launches: bool = False,
    refresh_ceilings: bool = False,
) -> BenchParams:
    return BenchParams(shapes or None, dtypes or None, compile, launches, refresh_ceilings)


def diagnose_options(
    *,
    dtype: str | None,
    shape: list[int] | None,
    gpu_facts: str = "auto",
    imports: list[str] | None = None,
    timeout: float = 900.0,
    sanitize: str | None = None,
) -> Options:
    """Reports to import are looked for here, before minutes of gathering."""
    for path in imports or []:
        if not os.path.isfile(path):
            raise fail(
                "no-such-file",
                f"--import {path}: no such file",
                "name an .ncu-rep, ncu CSV, .nsys-rep or nsys .sqlite",
                source="usage",
            )
    return Options(dtype, shape, gpu_facts, list(imports or []), timeout, sanitize)


def profile_request(
    *,
    cases: list[str],
    pin: str | dict | None,
    tool: str = "ncu",
    preset: str = "quick",
    metrics: str = "",
    warmup: int = 2,
    repeats: int | None = None,
    launch_count: int | None = None,
    all_kernels: bool = False,
    timeout: float = 900.0,
) -> Request:
    """`pin`: K=V,... as typed, or a sweep row's values."""
    return Request(
        tool=tool,
        preset=preset,
        metrics=[m.strip() for m in metrics.split(",") if m.strip()],
        cases=cases,
        warmup=warmup,
        repeats=repeats,
        launch_count=launch_count,
        kernel_filter=not all_kernels,
        timeout=timeout,
        pin=parse_settings(pin, "--pin") if isinstance(pin, str) and pin else dict(pin or {}),
    )
