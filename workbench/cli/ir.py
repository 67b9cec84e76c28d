"""`workbench ir NAME`: a kernel's IR at every stage, for the GPU at hand or any arch.

Artifacts (.ttir .ttgir .llir .ptx .cubin .sass) go to the run folder or --out. `--stage`
prints one stage, `--line N` follows one Python line through every stage, `--diff OTHER`
compares with another config (`K=V,...`) or another kernel (`NAME[:K=V,...]`).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import textwrap
from pathlib import Path

from workbench.app import start
from workbench.app.params import ir_params
from workbench.catalog.discovery import discover
from workbench.catalog.spec import DTYPES
from workbench.cli.options import add_arch_option, add_command_options, writable_folder
from workbench.ir.diff import diff_variants
from workbench.ir.linemap import STAGES
from workbench.ir.result import IrResult, IrVariant
from workbench.run import jobs
from workbench.runtime.errors import Problem, fail
from workbench.runtime.grammar import parse_shape
from workbench.views.text import fmt, print_json, print_problem, print_run_end, table

SHOWN_PER_STAGE = 24


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ir", help="IR at every stage (TTIR to SASS), mapped to Python lines")
    p.add_argument("name")
    add_selection_options(p)
    p.add_argument("--stage", choices=(*STAGES, "all"), default="all", help="stage to print")
    p.add_argument("--out", metavar="DIR", help="write the artifacts here (default: run folder)")
    p.add_argument("--line", type=int, metavar="N", help="follow kernel line N through stages")
    p.add_argument(
        "--diff",
        metavar="OTHER",
        help="compare with another config (K=V,...) or kernel (NAME or NAME:K=V,...)",
    )
    add_command_options(p, run)


def add_selection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="K=V,...", help="one config (default: every config)")
    add_arch_option(p, "compile")
    p.add_argument("--dtype", choices=DTYPES, help="input dtype (default: the kernel's first)")
    p.add_argument(
        "--shape",
        help="input shape, e.g. 4x32x4096x128 (default: the first check shape)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds (default 900)")


def ir_job(
    args: argparse.Namespace,
    name: str,
    configs: list[str],
    stages: list[str],
    *,
    out: str | None = None,
    cross_check: bool = False,
) -> jobs.Outcome:
    """Run the child job that compiles `name` as the selection options (`add_selection_options`)
    and --path of `args` say (shared by `ir` and `resources`); without --json each variant is
    printed as it is compiled; `cross_check` also cross-compiles a GPU launch."""
    params = ir_params(
        configs,
        stages,
        arch=args.arch,
        dtype=args.dtype,
        shape=list(parse_shape(args.shape)) if args.shape else None,
        out=writable_folder(out, "--out") if out else None,
        cross_check=cross_check,
    )
    entry = discover(args.path).find(name)
    return start.job("ir", entry, params, args.timeout, None if args.json else _progress)


def _ir_job(args: argparse.Namespace, name: str, configs: list[str]) -> jobs.Outcome:
    """`ir_job` for the `ir` command: every stage, written to --out."""
    return ir_job(args, name, configs, list(STAGES), out=args.out)


def _progress(event: dict) -> None:
    if event.get("event") == "variant":
        v = event["variant"]
        status = "error" if v.get("error") else "ok"
        print(f"  {status:<6} {v['label']}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.line is not None and args.line < 1:  # line 0 would read the file's last line
        raise fail(
            "bad-line",
            f"--line {args.line}: a file's lines count from 1",
            "name a line of the kernel's function, e.g. --line 20",
            source="usage",
        )
    if args.diff:
        return _run_diff(args)
    outcome = _ir_job(args, args.name, [args.config] if args.config else [])
    if args.json:
        print_json(outcome.to_dict())
    elif outcome.result:
        result = IrResult.from_dict(outcome.result)
        for variant in result.variants:
            _show_variant(args, result, variant)
    return finish(outcome, args.json)


def finish(outcome: jobs.Outcome, as_json: bool) -> int:
    if outcome.problem and not as_json:
        print_problem(outcome.problem)
    print_run_end(outcome, (outcome.result or {}).get("out_dir"))
    if not outcome.result:
        return 2
    return 1 if IrResult.from_dict(outcome.result).summary()["errors"] else 0


def _show_variant(args: argparse.Namespace, result: IrResult, variant: IrVariant) -> None:
    print(f"{result.kernel} [{variant.label}] {result.arch} ({result.mode})")
    if variant.error:
        print(textwrap.indent(f"error: {Problem(**variant.error)}", "  "))
        return
    if args.line is not None:
        _show_trail(variant, args.line)
    elif args.stage != "all":
        print(Path(variant.artifacts[args.stage]).read_text())
    else:
        res = variant.resources or {}
        rows = [(s, variant.line_counts.get(s, "-"), p) for s, p in variant.artifacts.items()]
        print(table(("stage", "lines", "file"), rows))
        occ = res.get("occupancy") or {}
        print(
            f"  {res.get('regs')} registers, {res.get('spill_bytes')} B spilled, "
            f"{res.get('shared_bytes')} B shared, occupancy {fmt(occ.get('percent'))}% "
            f"({occ.get('limiter', '-')}); `--line N` follows a line, `resources` explains"
        )
    print()


def _show_trail(variant: IrVariant, line: int) -> None:
    file = variant.file
    try:
        source = Path(file).read_text().splitlines()[line - 1].strip()
    except (OSError, IndexError):
        source = ""
    print(f"{os.path.basename(file)}:{line}  {source}")
    outside = line_outside(variant, line)
    if outside:
        print(f"  {outside}")
        return
    for stage in STAGES:
        ir_lines = ((variant.sourcemap.get(stage) or {}).get(file) or {}).get(str(line), [])
        path = variant.artifacts.get(stage)
        if not path:
            continue
        text = Path(path).read_text().splitlines()
        print(f"  {stage}: {len(ir_lines)} line(s)")
        for n in ir_lines[:SHOWN_PER_STAGE]:
            print(f"    {n:>6} | {text[n - 1].strip()}")
        if len(ir_lines) > SHOWN_PER_STAGE:
            print(f"    ... {len(ir_lines) - SHOWN_PER_STAGE} more in {path}")


def line_outside(variant: IrVariant, line: int) -> str | None:
    """Why `--line` can show nothing: no stage maps the line and it lies outside the kernel's
    function (a helper it calls would be mapped)."""
    file = variant.file
    if any(str(line) in ((m or {}).get(file) or {}) for m in variant.sourcemap.values()):
        return None
    try:
        tree = ast.parse(Path(file).read_text())
    except (OSError, SyntaxError):
        return None
    spans = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.lineno == variant.def_line
    ]
    if not spans or spans[0][0] <= line <= spans[0][1]:
        return None
    first, last = spans[0]
    return (
        f"--line {line} is outside {variant.function}, which spans lines {first}-{last} of "
        f"{os.path.basename(file)}: no stage has code from it"
    )


def _run_diff(args: argparse.Namespace) -> int:
    base = args.config or ""
    if "=" in args.diff.split(":")[0]:
        outcomes = [_ir_job(args, args.name, [base, args.diff])]
    else:
        other, _, config = args.diff.partition(":")
        outcomes = [_ir_job(args, args.name, [base]), _ir_job(args, other, [config])]
    results = [IrResult.from_dict(o.result) for o in outcomes if o.result]
    pair = [v for r in results for v in r.variants]
    if len(results) != len(outcomes) or len(pair) != 2 or any(v.error for v in pair):
        if args.json:
            print_json({"runs": [o.to_dict() for o in outcomes]})
        for o in outcomes:
            finish(o, args.json)
        for v in pair:
            if v.error and not args.json:
                print(f"{v.label}: {v.error['cause']}", file=sys.stderr)
        return 2 if len(results) != len(outcomes) else 1
    diff = diff_variants(results[0].kernel, pair[0], results[-1].kernel, pair[1], STAGES)
    if args.json:
        print_json({**diff.to_dict(text_stage=args.stage), "runs": [o.run_id for o in outcomes]})
        return 0
    print(f"a: {diff.a.label}\nb: {diff.b.label}\n")
    changes = [(k, fmt(x), fmt(y), fmt(d)) for k, x, y, d in diff.resources]
    print(table(("resource", "a", "b", "b-a"), changes))
    print()
    print(
        table(
            ("stage", "lines a", "lines b", "+", "-"),
            [(d.stage, d.lines_a, d.lines_b, d.added, d.removed) for d in diff.stages],
        )
    )
    for d in diff.stages:
        if args.stage == d.stage:
            print(f"\n{d.text}" if d.text else f"\n{d.stage}: no difference")
    return 0
