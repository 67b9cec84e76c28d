"""The "ir" job kind (child process): the IR stage compiles (`ir.job`), then the static findings
are made from its facts here, above it, and kept in the result the store holds.

The facts (TTIR text, sources) stay in the child: the result carries the findings, as it always
has, so stored results and `--json` read the same.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workbench.catalog.spec import KernelSpec
from workbench.diagnosis import diagnose_compile
from workbench.ir.job import compile_kernel
from workbench.run.params import IrParams


def job(spec: KernelSpec, params: IrParams, ctx: Any) -> dict:
    result, facts = compile_kernel(spec, params, ctx)
    findings = [f.to_dict() for f in diagnose_compile(facts)]
    return replace(result, findings=findings).to_dict()
