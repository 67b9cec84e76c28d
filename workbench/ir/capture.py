"""Find out what a spec launches: run kernel_fn once on small inputs with launches intercepted.

`kernel[grid](...)` goes through `JITFunction.run` (and `Autotuner.run` for @autotune); while
capturing, both record their arguments instead of compiling or launching. An autotuned kernel
is recorded once per config. Binding each recorded launch with Triton's own binder for the
target gives exactly the specialisation a real launch would compile (child process only).
"""

from __future__ import annotations

import contextlib
import copy
import math
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from workbench.catalog.spec import KernelSpec
from workbench.runtime import compat
from workbench.runtime.errors import WorkbenchError, fail


@dataclass
class Launch:
    """One distinct compile of one @triton.jit function."""

    fn: Any
    args: tuple
    kwargs: dict
    tuned: bool = False
    """Launched by an Autotuner (not the bare function, though one may wrap it)."""
    grid: Any = None
    """As launched: a tuple, or a callable of the arguments by name (as `JITFunction.run`
    calls it)."""

    @property
    def name(self) -> str:
        return self.fn.__name__

    def arguments(self) -> dict[str, Any]:
        """Every parameter's value by name, defaults included."""
        bound = self.fn.signature.bind(*self.args, **_arg_kwargs(self.fn, self.kwargs))
        bound.apply_defaults()
        return dict(bound.arguments)

    def constexprs(self) -> dict[str, Any]:
        """Declared tl.constexpr parameters and their values (defaults included)."""
        arguments = self.arguments()
        return {
            p.name: arguments[p.name]
            for p in self.fn.params
            if p.is_constexpr and p.name in arguments
        }

    def programs(self) -> int | None:
        """How many programs the launch runs; None where the grid is unknown or its function
        fails on these arguments."""
        grid = self.grid
        try:
            if callable(grid):
                grid = grid(self.arguments())
            dims = [int(d) for d in cast("Iterable[Any]", grid)]
        except Exception:  # noqa: BLE001 - the kernel's own grid function: no count, no waves
            return None
        return math.prod(dims) if dims else None

    def with_values(self, values: dict[str, Any]) -> Launch:
        """The same launch with some constexprs or compile options replaced."""
        args = list(self.args)
        kwargs = dict(self.kwargs)
        names = [p.name for p in self.fn.params]
        for k, v in values.items():
            i = names.index(k) if k in names else -1
            if 0 <= i < len(args):
                args[i] = v
            else:
                kwargs[k] = v
        return Launch(self.fn, tuple(args), kwargs, self.tuned, self.grid)


def _snapshot(arg: Any) -> Any:
    """A copy of a host-side TMA descriptor, whose block shape a config's pre_hook rewrites in
    place for every config; other arguments as they are."""
    if hasattr(arg, "block_shape") and hasattr(arg, "base"):
        arg = copy.copy(arg)
        arg.block_shape = list(arg.block_shape)
    return arg


def _arg_kwargs(fn: Any, kwargs: dict) -> dict:
    names = {p.name for p in fn.params}
    return {k: v for k, v in kwargs.items() if k in names}


@contextlib.contextmanager
def intercepted(launches: list[Launch], targets: set[int] | None) -> Iterator[None]:
    """Record launches of JITFunctions (only those in `targets`, by id, when given)."""
    classes = compat.launcher_classes()
    jit_cls, tune_cls = classes["jit"], classes["autotune"]
    jit_run, tune_run = jit_cls.run, tune_cls.run
    tuning = [False]

    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        if targets is None or id(self) in targets:
            launches.append(Launch(self, tuple(map(_snapshot, args)), kwargs, tuning[0], grid))
        return None

    def tune(self: Any, *args: Any, **kwargs: Any) -> Any:
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        named.pop("grid", None)
        named.pop("warmup", None)
        tuning[0] = True
        try:
            for config in self.configs:
                values = config.all_kwargs()
                if config.pre_hook:  # e.g. sets TMA descriptors' block shapes, as autotune does
                    config.pre_hook({**named, **values})
                self.fn.run(*args, **{**kwargs, **values})
        finally:
            tuning[0] = False
        return None

    jit_cls.run, tune_cls.run = run, tune
    try:
        yield
    finally:
        jit_cls.run, tune_cls.run = jit_run, tune_run


def capture(
    spec: KernelSpec,
    device: str,
    dtype_name: str | None = None,
    shape: tuple[int, ...] | None = None,
) -> list[Launch]:
    """Every launch kernel_fn makes for `shape` (default: the first check shape), in
    `dtype_name` (default: the spec's first dtype)."""
    from workbench.runtime import tensors

    if shape is None:
        sets = [s for s in spec.shapes if s != "bench"] or list(spec.shapes)
        shape = spec.shape_set(sets[0])[0] if sets else ()
    dtype_name = dtype_name or (spec.dtypes[0] if spec.dtypes else None)
    dtype = tensors.torch_dtype(dtype_name) if dtype_name else None
    targets = {id(compat.base_function(j)) for j in spec.jit} if spec.jit else None
    launches: list[Launch] = []
    try:
        made = tensors.inputs_text(shape, dtype_name)
        args = tensors.make_inputs(lambda dev: spec.make_inputs(shape, dtype, dev), made, device)
        with intercepted(launches, targets):
            spec.kernel_fn(*args)
    except WorkbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's wrapper failed; say where
        from workbench.run.faults import problem_from_exception

        problem = problem_from_exception(exc)
        raise fail(
            "capture-failed",
            f"running {spec.name}'s kernel_fn to find its launches raised "
            f"{type(exc).__name__}: {exc}",
            f"make kernel_fn run on inputs of shape {shape} (launches are only recorded, so "
            "outputs stay unwritten), or pick another with --shape",
            file=problem.file,
            line=problem.line,
            detail=problem.detail,
        ) from exc
    if not launches:
        names = ", ".join(getattr(j, "__name__", "?") for j in spec.jit) or "any @triton.jit"
        raise fail(
            "no-launch",
            f"{spec.name}'s kernel_fn launched none of {names} on shape {shape}",
            "list the @triton.jit/@autotune objects kernel_fn launches in KernelSpec(jit=...)",
        )
    return launches


def compile_mode(spec: KernelSpec, file: str) -> KernelSpec:
    """The spec with real (compilable) @triton.jit functions.

    Without a GPU the worker imports kernels under TRITON_INTERPRET=1, which gives interpreted
    functions that cannot be compiled. Re-import the module (and any module holding interpreted
    functions, so @jit helpers it imports come back compilable) with the interpreter off.
    """
    if not compat.interpreting() and not any(compat.is_interpreted(j) for j in spec.jit):
        return spec
    from workbench.catalog.loader import exec_module, spec_named

    with compat.interpreter(False):
        compat.compilable_triton_helpers()
        for name, mod in list(sys.modules.items()):
            if _holds_interpreted(mod):
                _forget(name, mod)
        module = exec_module(file, "workbench_compile")
    cause = f"re-importing {file} without the interpreter gives no KernelSpec {spec.name!r}"
    remedy = "make the KernelSpec independent of TRITON_INTERPRET"
    return spec_named(module, spec.name, cause, remedy, file=file)


def _forget(name: str, mod: Any) -> None:
    """Drop a module so the next import runs it again; `from pkg import mod` reads the parent
    package's attribute first, so that goes too."""
    del sys.modules[name]
    parent, _, child = name.rpartition(".")
    if parent in sys.modules and getattr(sys.modules[parent], child, None) is mod:
        delattr(sys.modules[parent], child)


def _holds_interpreted(mod: Any) -> bool:
    name = getattr(mod, "__name__", "") or ""
    if name.startswith(("triton", "torch", "workbench.")):
        return False
    try:
        values = list(vars(mod).values())
    except TypeError:
        return False
    return any(_interpreted(v) for v in values)


def _interpreted(value: Any) -> bool:
    try:
        return compat.is_interpreted(value)
    except Exception:  # noqa: BLE001 - odd module attributes must not stop the scan
        return False
