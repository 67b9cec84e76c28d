"""Import kernel modules and hand back their KernelSpecs (child-process side: imports torch)."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from workbench.catalog.discovery import THREE_NAMES, KernelEntry
from workbench.catalog.spec import KernelSpec, Shape, summary
from workbench.runtime.errors import fail

_loaded: dict[str, Any] = {}


def import_module(file: str) -> Any:
    """Import a kernel module from its path; any failure becomes a WorkbenchError with a line."""
    if file not in _loaded:
        _loaded[file] = exec_module(file, "workbench_kernels")
    return _loaded[file]


def exec_module(file: str, package: str) -> Any:
    """Run the module at `file` afresh as `package.<stem>_<hash>`; an exception it raises becomes
    a WorkbenchError naming its line. Ctrl-C and SystemExit are not errors of the module: they
    go on up, so an interrupt stops the job and an exit status stays the module's own."""
    path = Path(file).resolve()
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the module's sibling imports resolve as they would for it
    mod_name = f"{package}.{path.stem}_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise fail(
            "import-error",
            f"cannot import {path}",
            "is it a Python file?",
            file=str(path),
            source="usage",
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        missing = isinstance(exc, ModuleNotFoundError)
        raise fail(
            "missing-package" if missing else "import-error",
            f"importing the module raised {type(exc).__name__}: {exc}",
            f"pip install the package that provides {exc.name!r}"
            if missing
            else "fix the module so that importing it succeeds",
            file=str(path),
            line=_line_in(exc, str(path)),
            detail=traceback.format_exc(),
            source="environment" if missing else "user-code",
        ) from exc
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


def _line_in(exc: BaseException, file: str) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename == file:
        return exc.lineno
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == file:
            line = lineno
    return line


def module_specs(module: Any) -> list[KernelSpec]:
    """Every KernelSpec at module level (also inside lists, tuples and dicts)."""
    found: list[KernelSpec] = []
    for value in vars(module).values():
        items = value.values() if isinstance(value, dict) else value
        for item in items if isinstance(items, (list, tuple, type({}.values()))) else [value]:
            if isinstance(item, KernelSpec) and item not in found:
                found.append(item)
    if not found and all(hasattr(module, n) for n in THREE_NAMES):
        found.append(three_name_spec(module, Path(module.__file__).stem))
    return found


def three_name_spec(module: Any, name: str) -> KernelSpec:
    """Wrap NVIDIA's three-name contract: get_inputs() decides shape and dtype. It has no FLOP or
    byte model: `bench` counts both from the reference on the inputs it times (`bench.work`)."""
    return KernelSpec(
        name=name,
        kernel_fn=module.kernel_fn,
        reference_fn=module.reference_fn,
        make_inputs=ThreeNameInputs(module),
        shapes={"check": [()], "bench": [()]},
        dtypes=(),
        description=summary(module.__doc__),
        jit=_kernels(module),
    )


DERIVED = "derived"
"""The shape set `check` adds for a three-name module: irregular shapes cut from its inputs."""
DERIVE_MULTIPLE = 16
"""Sizes that are multiples of this are cut to an irregular size; the others are kept."""


class ThreeNameInputs:
    """make_inputs of a three-name module. Shape () is get_inputs() as given. Any other shape
    lists the sizes that replace, in order, the distinct sizes of the given tensors that are
    multiples of DERIVE_MULTIPLE: every tensor is cut to them, so a size shared by inputs stays
    shared; non-tensor arguments are kept as they are."""

    def __init__(self, module: Any):
        self.module = module
        self._derived: list[Shape] | None = None

    def __call__(self, shape: Shape, dtype: Any, device: str) -> tuple[Any, ...]:
        from workbench.runtime.tensors import on_device

        args = tuple(on_device(self.module.get_inputs, device))
        if shape:
            args = _cut(args, tuple(shape))
        return tuple(_cast_floating(a, dtype) for a in args) if dtype is not None else args

    def derived_shapes(self, device: str) -> list[Shape]:
        """One irregular shape: each size n that is a multiple of DERIVE_MULTIPLE becomes
        n * 3 // 4 + 1, odd, so the last tile of any power-of-two block is partial. Empty when
        no size is such a multiple, or when get_inputs() fails (the given case says why)."""
        if self._derived is None:
            from workbench.runtime.tensors import sizes_on_meta

            try:  # sizes only: made on the meta device, so get_inputs() allocates nothing
                sizes = _cuttable_sizes(sizes_on_meta(lambda dev: self((), None, dev), device))
            except Exception:  # noqa: BLE001 - reported by the case that runs the given inputs
                sizes = []
            self._derived = [tuple(n * 3 // 4 + 1 for n in sizes)] if sizes else []
        return self._derived


def derived_shapes(spec: KernelSpec, device: str) -> list[Shape]:
    """The irregular shapes `check` adds to a three-name module's own (its inputs made on
    `device`); none for a KernelSpec, which declares its shapes."""
    made = spec.make_inputs
    return made.derived_shapes(device) if isinstance(made, ThreeNameInputs) else []


def _cuttable_sizes(args: tuple[Any, ...]) -> list[int]:
    import torch

    sizes: list[int] = []
    for a in args:
        for n in a.shape if isinstance(a, torch.Tensor) else ():
            if n and n % DERIVE_MULTIPLE == 0 and n not in sizes:
                sizes.append(n)
    return sizes


def _cut(args: tuple[Any, ...], shape: Shape) -> tuple[Any, ...]:
    import torch

    sizes = _cuttable_sizes(args)
    if len(sizes) != len(shape):
        raise fail(
            "bad-shape",
            f"shape {shape} gives {len(shape)} sizes; get_inputs() has {len(sizes)} sizes that "
            f"are multiples of {DERIVE_MULTIPLE} ({sizes})",
            "give one size per such input size, in their order of appearance",
            source="usage",
        )
    new = dict(zip(sizes, shape))
    return tuple(
        a[tuple(slice(0, new.get(n, n)) for n in a.shape)].contiguous()
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    )


def _kernels(module: Any) -> tuple[Any, ...]:
    """The module's @triton.jit / @triton.autotune objects: what a three-name kernel launches."""
    from workbench.runtime import compat

    classes = tuple(compat.launcher_classes().values())
    return tuple(v for v in vars(module).values() if isinstance(v, classes))


def _cast_floating(arg: Any, dtype: Any) -> Any:
    import torch

    if isinstance(arg, torch.Tensor) and arg.is_floating_point():
        return arg.to(dtype)
    return arg


def load_spec(entry: KernelEntry) -> KernelSpec:
    module = import_module(entry.file)
    cause = f"{entry.file} declares {entry.name!r} but importing it gives no such KernelSpec"
    remedy = "make the KernelSpec a module-level value (or in a module-level list)"
    return spec_named(module, entry.name, cause, remedy, file=entry.file, line=entry.line)


def spec_named(module: Any, name: str, cause: str, remedy: str, **where: object) -> KernelSpec:
    """The module's KernelSpec called `name`; a spec-missing failure (`cause`, `remedy`, and
    `where` for `fail`) when it has none."""
    for spec in module_specs(module):
        if spec.name == name:
            return spec
    raise fail("spec-missing", cause, remedy, **where)
