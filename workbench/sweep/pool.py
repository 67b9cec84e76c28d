"""Compile configs in parallel and read their static resources (the sweep job's side; imports
triton).

The workers are forked once, before the job makes a CUDA context (the driver itself may have
started: `runtime.driver_start`), from a process that has already imported torch, triton and the
kernel module: no start-up per config (16 fresh processes that each import torch ate the
parallel gain on the GPU host). Each task carries only plain data, what
`compat.bind_launch` made of one config's launch, and names the @triton.jit function by module
and name; the worker compiles it with `triton.compile` (the cubin lands in Triton's cache, where
the timing launch finds it) and reads registers, spills and shared memory from the cubin.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from workbench.catalog.spec import KernelSpec, Shape
from workbench.ir import disasm
from workbench.ir.capture import Launch
from workbench.ir.occupancy import DEFAULT_ARCH
from workbench.run.faults import problem_from_exception
from workbench.runtime import compat, driver_start
from workbench.runtime.errors import WorkbenchError, fail


class CompilePool:
    """`jobs` forked workers, started at once; `submit` returns a Future of `compile_task`,
    `count_flops` one of the reference's FLOPs at a shape (`spec`'s, inherited by the fork)."""

    def __init__(self, jobs: int, spec: KernelSpec | None = None):
        self.jobs = max(1, jobs)
        driver_start.wait()  # no fork while another thread is inside the driver
        context = multiprocessing.get_context("fork")
        self.executor = ProcessPoolExecutor(
            self.jobs,
            mp_context=context,
            initializer=_follow_parent,
            initargs=(os.getpid(), spec),  # forked, not pickled: a spec's lambdas come along
        )
        self.executor.submit(os.getpid)  # forks every worker now, before any CUDA context
        # this process's first launch reads the same caches: filled beside its CUDA start-up
        threading.Thread(target=_prime, daemon=True).start()

    def count_flops(self, shape: Shape, dtype: str | None) -> Future:
        """A Future of `sweep.facts.counted_flops` at `shape`, counted in a worker: its first
        use of the meta device costs seconds that the sweep's own process does not wait for."""
        return self.executor.submit(_count_task, tuple(shape), dtype)

    def submit(self, launch: Launch, arch: int, cubin: Path) -> Future:
        options, signature, constexprs, attrs = compat.bind_launch(
            launch.fn, compat.gpu_target(arch), launch.args, launch.kwargs
        )
        where = (launch.fn.fn.__module__, launch.fn.__name__)
        bound = (options.__dict__, signature, constexprs, attrs)
        return self.executor.submit(compile_task, where, arch, bound, str(cubin))

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


_SPEC: KernelSpec | None = None
"""In a worker: the sweep's spec, as the pool's creator had it."""


def _follow_parent(parent: int, spec: KernelSpec | None) -> None:
    """In a worker: keep the sweep's spec, end with the process that forked it, however that
    one ended (a segfault leaves no one to close the pool; a Ray actor's death is seen only once
    every process holding its sockets is gone), and fill the compiler's caches while the
    sweep's process plans, rather than in the first compile."""
    global _SPEC
    _SPEC = spec

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    _prime()


def _prime() -> None:
    try:
        compat.prime_compiler(DEFAULT_ARCH)
    except Exception:  # noqa: BLE001 - a compile that cannot start says why, as a config's row
        pass


def compile_task(where: tuple[str, str], arch: int, bound: tuple, cubin: str) -> dict:
    """In a worker: compile one config, write its cubin, read its resources. Never raises: a
    failure is the result's "problem"."""
    out: dict[str, Any] = {"hash": None, "compile_s": None, "resources": None, "problem": None}
    try:
        fn = _function(*where)
        start = time.perf_counter()
        kernel = compat.compile_bound(fn, arch, bound)
        out["compile_s"] = round(time.perf_counter() - start, 3)
        out["hash"] = kernel.hash
        out["resources"] = static_resources(kernel, arch, Path(cubin))
    except WorkbenchError as exc:
        out["problem"] = exc.problem.to_dict()
    except Exception as exc:  # noqa: BLE001 - one config failing leaves the others' results
        out["problem"] = problem_from_exception(exc).to_dict()
    return out


def _count_task(shape: Shape, dtype: str | None) -> float | None:
    from workbench.sweep import facts

    return facts.counted_flops(_SPEC, shape, dtype) if _SPEC is not None else None


def _function(module: str, name: str) -> Any:
    found = getattr(sys.modules.get(module), name, None)
    if found is None:
        raise fail(
            "not-module-level",
            f"{name} is not a module-level name of {module}, so a compile worker cannot find it",
            "define the @triton.jit (or @triton.autotune) function at the module's top level",
        )
    return compat.base_function(found)


def static_resources(kernel: Any, arch: int, cubin: Path) -> dict:
    """Registers, spills, shared memory and occupancy of a compiled kernel, from its cubin."""
    cubin.parent.mkdir(parents=True, exist_ok=True)
    cubin.write_bytes(kernel.asm["cubin"])
    return disasm.kernel_resources(kernel, arch, str(cubin)).to_dict()
