"""`workbench resources NAME`: registers, spills, shared memory and occupancy per config, and the
static findings (spills, low occupancy, IR and source patterns) the diagnosis reads.

Works without a GPU (cross-compiles for --arch). On a GPU the driver's n_regs/n_spills after
loading are shown beside the static figures, with a cross-compile of the same launch.
"""

from __future__ import annotations

import argparse

from workbench.cli.ir import add_selection_options, finish, ir_job
from workbench.cli.options import add_command_options
from workbench.ir.result import IrResult, IrVariant
from workbench.runtime.errors import Problem
from workbench.views.rows import RESOURCE_HEADERS, finding_lines, resource_row
from workbench.views.text import print_json, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("resources", help="registers, spills, shared memory, occupancy, findings")
    p.add_argument("name")
    add_selection_options(p)
    add_command_options(p, run)


def run(args: argparse.Namespace) -> int:
    configs = [args.config] if args.config else []
    outcome = ir_job(args, args.name, configs, ["ttir"], cross_check=True)
    if args.json:
        print_json(outcome.to_dict())
    elif outcome.result:
        result = IrResult.from_dict(outcome.result)
        print(f"{result.kernel} on {result.arch} ({result.mode})")
        print(table(RESOURCE_HEADERS, [resource_row(v) for v in result.variants]))
        device = [v for v in result.variants if v.device]
        if device:
            print("\ndriver after loading (n_regs, n_spills = local bytes / 4):")
            print(table(DEVICE_HEADERS, [_device_row(v) for v in device]))
        for v in result.variants:
            if v.error:
                print(f"\n{v.label}: {Problem(**v.error)}")
        print()
        print(finding_lines(result.findings))
    return finish(outcome, args.json)


DEVICE_HEADERS = (
    "config",
    "n_regs",
    "n_spills",
    "static regs",
    "static spills",
    "agree",
    "cross-compiled regs",
    "same hash",
)


def _device_row(v: IrVariant) -> tuple:
    d = v.device or {}
    cross = v.cross_check or {}
    agree = "yes" if d["regs_match"] and d["spills_match"] else "no"
    return (
        v.label,
        d["n_regs"],
        d["n_spills"],
        d["predicted_regs"],
        d["predicted_spills"],
        agree,
        cross.get("regs", "-"),
        {True: "yes", False: "no", None: "-"}.get(cross.get("same_hash"), "-"),
    )
