"""Import kernel modules and hand back their KernelSpecs (child-process side: imports torch)."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from workbench.catalog.discovery import THREE_NAMES, KernelEntry
from workbench.catalog.spec import KernelSpec
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
    """Wrap NVIDIA's three-name contract: get_inputs() decides shape and dtype."""

    def make_inputs(shape: Any, dtype: Any, device: str) -> tuple[Any, ...]:
        from workbench.runtime.tensors import on_device

        args = on_device(module.get_inputs, device)
        return tuple(_cast_floating(a, dtype) for a in args) if dtype is not None else tuple(args)

    return KernelSpec(
        name=name,
        kernel_fn=module.kernel_fn,
        reference_fn=module.reference_fn,
        make_inputs=make_inputs,
        shapes={"check": [()], "bench": [()]},
        dtypes=(),
        description=(module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else "",
        jit=_kernels(module),
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
    for spec in module_specs(module):
        if spec.name == entry.name:
            return spec
    raise fail(
        "spec-missing",
        f"{entry.file} declares {entry.name!r} but importing it gives no such KernelSpec",
        "make the KernelSpec a module-level value (or in a module-level list)",
        file=entry.file,
        line=entry.line,
    )
