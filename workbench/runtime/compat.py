"""Differences between Triton versions and modes, in one place, and the other version- or
private-API-dependent calls the child makes (NVML's bindings, torch's NVML device index).

Imported only by child processes (it imports triton). Supported: Triton 3.4 to 3.9, where
`ASTSource(fn, signature, constexprs, attrs)` takes every argument in `signature` (constexprs
as "constexpr") and attrs as `{(index,): [["tt.divisibility", 16]]}`.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
from collections.abc import Iterator
from typing import Any

from workbench.runtime.errors import fail

MIN_VERSION = (3, 4)


def triton_version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def require_supported() -> None:
    if triton_version() < MIN_VERSION:
        import triton

        raise fail(
            "unsupported-triton",
            f"Triton {triton.__version__} is older than {'.'.join(map(str, MIN_VERSION))}",
            "pip install 'triton>=3.4'",
        )


def tool_path(name: str) -> str:
    """ptxas, cuobjdump or nvdisasm: the knob (which reads TRITON_<NAME>_PATH), else the wheel's."""
    from triton import knobs

    tool = getattr(knobs.nvidia, name, None)
    path = getattr(tool, "path", None) if tool is not None else None
    if path and os.path.exists(path):
        return path
    import triton

    bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    if os.path.exists(bundled):
        return bundled
    raise fail(
        "tool-missing",
        f"{name} is neither at TRITON_{name.upper()}_PATH nor in the triton wheel",
        f"install a triton wheel that bundles {name}, or set TRITON_{name.upper()}_PATH",
    )


def gpu_target(arch: int) -> Any:
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", arch, 32)


def device_arch() -> int:
    """Compute capability of the current GPU as an int (90 for sm_90)."""
    from triton.runtime.driver import driver

    target = driver.active.get_current_target()
    if target is None:
        raise fail(
            "needs-gpu",
            "Triton's driver has no current GPU",
            "run on a host whose GPU torch.cuda.is_available() sees",
            source="environment",
        )
    return int(target.arch)


def is_interpreted(obj: Any) -> bool:
    """True for an @triton.jit made while TRITON_INTERPRET=1 (or a wrapper around one)."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(base_function(obj), InterpretedFunction)


def base_function(obj: Any) -> Any:
    """The @triton.jit function under any @autotune / @heuristics wrappers."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    while isinstance(obj, (Autotuner, Heuristics)):
        obj = obj.fn
    return obj


def launcher_classes() -> dict[str, type]:
    """The classes whose `run` a launch goes through: `kernel[grid](...)` calls `run`."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    return {"jit": JITFunction, "autotune": Autotuner}


@contextlib.contextmanager
def pinned(target: Any, constexprs: dict[str, Any], options: dict[str, Any]) -> Iterator[None]:
    """While inside, launches of `target` (an Autotuner or a JITFunction) use these constexpr
    values and compile options (num_warps, num_stages, ...): one config, whatever it tunes."""
    from triton import Config

    classes = launcher_classes()
    if isinstance(target, classes["autotune"]):
        saved = target.configs
        hook = saved[0].pre_hook if saved else None
        target.configs = [Config(constexprs, pre_hook=hook, **options)]
        try:
            yield
        finally:
            target.configs = saved
        return
    jit_cls = classes["jit"]
    original = jit_cls.run
    values = {**constexprs, **options}

    def run(self: Any, *args: Any, **kw: Any) -> Any:
        return original(self, *args, **({**kw, **values} if self is target else kw))

    jit_cls.run = run
    try:
        yield
    finally:
        jit_cls.run = original


@contextlib.contextmanager
def first_config_only(tuners: list[Any]) -> Iterator[list[str]]:
    """While inside, each Autotuner with several configs runs its first alone: the interpreter
    has no GPU for the autotuner's benchmark (`do_bench` asks for a driver and fails). Yields the
    `Autotuner name: config` of each one so pinned."""
    saved = [(t, t.configs) for t in tuners if len(t.configs) > 1]
    for tuner, configs in saved:
        tuner.configs = configs[:1]
    try:
        yield [f"{base_function(t).__name__}: {configs[0]}" for t, configs in saved]
    finally:
        for tuner, configs in saved:
            tuner.configs = configs


@contextlib.contextmanager
def interpreter(enabled: bool) -> Iterator[None]:
    """Decide whether @triton.jit (run inside this block) builds interpreted functions."""
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if enabled else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old


def fix_interpreter() -> None:
    """Bring Triton 3.4-3.8's interpreter to 3.9's behaviour where the workbench relies on it.
    Call it once TRITON_INTERPRET=1 is set, before kernel modules are imported."""
    _launch_through_run()
    _loop_bounds_squeezed()


def _launch_through_run() -> None:
    """Make `kernel[grid](...)` go through `InterpretedFunction.run`, as it does from 3.6, and
    leave triton.language as it was after each launch, as 3.6 does.

    In 3.4 and 3.5 `run` is a closure set on each instance and `kernel[grid]` makes its
    GridExecutor directly, so a wrapper of the class's `run` (recording launches, pinning a
    config) never sees an interpreted launch. Give the class 3.6's `run` and route both there.
    """
    from triton.runtime.interpreter import GridExecutor, InterpretedFunction

    if "run" in vars(InterpretedFunction):
        return
    init = InterpretedFunction.__init__

    def __init__(self: Any, fn: Any, **kwargs: Any) -> None:
        init(self, fn, **kwargs)
        del self.run  # the instance's closure would hide the class's run

    def run(self: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        if warmup:
            return None
        with _language_restored():
            return GridExecutor(self.rewrite(), self.arg_names, grid)(*args, **kwargs)

    def launcher(self: Any, grid: Any) -> Any:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    InterpretedFunction.__init__ = __init__
    InterpretedFunction.run = run
    InterpretedFunction.__getitem__ = launcher


@contextlib.contextmanager
def _language_restored() -> Iterator[None]:
    """Put back what a 3.4/3.5 launch patches into triton.language (its builtins, tensor methods,
    reduce and scan), which they leave in place: a kernel compiled later in the same process
    would be built with the interpreter's semantics ("'block_argument' object has no attribute
    'dtype'")."""
    import triton.language as tl

    core = tl.core
    spaces = [tl, core, tl.math, core.tensor, core.dtype, core.tensor_descriptor_base]
    saved = [(space, dict(vars(space))) for space in spaces]
    try:
        yield
    finally:
        for space, before in saved:
            for name, value in list(vars(space).items()):
                if name not in before:
                    delattr(space, name)
                elif value is not before[name]:
                    setattr(space, name, before[name])


def _loop_bounds_squeezed() -> None:
    """Let Triton 3.4-3.6's interpreter run loops with a runtime bound under numpy >= 2.4.

    Their interpreter gives its tensors `__index__ = int(data)` on a one-element array, which
    numpy 2.4 refuses ("only 0-dimensional arrays can be converted to Python scalars"); 3.7
    squeezes the array first. Do the same where it does not.
    """
    import inspect

    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor
    if getattr(original, "squeezes", False) or "squeeze()" in inspect.getsource(original):
        return

    def patched(tensor: Any, *scope: Any) -> None:
        original(tensor, *scope)  # the scope (3.5+) restores the original at the end of a launch
        tensor.__index__ = lambda self: int(self.handle.data.squeeze())

    patched.squeezes = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patched


INTERPRETER_MEMORY_OPS = (
    "create_masked_load",
    "create_masked_store",
    "create_atomic_rmw",
    "create_atomic_cas",
)


def interpreter_memory_hooks() -> tuple[Any, type] | None:
    """Where the interpreter touches memory: its builder (one instance; a tl.load, tl.store or
    atomic reaches one of INTERPRETER_MEMORY_OPS with the raw addresses first, then the mask,
    in 3.4 to 3.9 alike, the cache options after them having changed) and the class that runs a
    launch (GridExecutor, whose `_init_args_hst` hands the kernel the host copies of its tensor
    arguments). None where a Triton release has them otherwise."""
    from triton.runtime import interpreter

    builder = getattr(interpreter, "interpreter_builder", None)
    executor = getattr(interpreter, "GridExecutor", None)
    if builder is None or executor is None or not hasattr(executor, "_init_args_hst"):
        return None
    if not all(hasattr(builder, name) for name in INTERPRETER_MEMORY_OPS):
        return None
    return builder, executor


def interpreting() -> bool:
    """Whether @triton.jit builds interpreted functions now (TRITON_INTERPRET is set)."""
    from triton import knobs

    return bool(knobs.runtime.interpret)


def compilable_triton_helpers() -> int:
    """Turn Triton's own @jit helpers (tl.sum, tl.cdiv, ...) back into compilable functions.

    Imported under TRITON_INTERPRET=1, triton.language builds them as interpreted functions,
    which the compiler cannot inline. Each is rebuilt as a JITFunction from the same Python
    function and options, in every module namespace and class (tensor methods) that holds it.
    Returns how many were rebuilt.
    """
    import sys

    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    made: dict[int, Any] = {}

    def rebuilt(value: Any) -> Any:
        if id(value) not in made:
            kwargs = getattr(value, "kwargs", None) or getattr(value.rewriter, "kwargs", {})
            made[id(value)] = JITFunction(value.fn, **kwargs)
        return made[id(value)]

    for name, module in list(sys.modules.items()):
        if not name.startswith("triton.language") or module is None:
            continue
        spaces = [module] + [v for v in vars(module).values() if isinstance(v, type)]
        for space in spaces:
            for attr, value in list(vars(space).items()):
                if isinstance(value, InterpretedFunction):
                    setattr(space, attr, rebuilt(value))
    return len(made)


def line_info_disabled() -> bool:
    from triton import knobs

    return bool(knobs.compilation.disable_line_info)


def _launch_kwargs(fn: Any, kwargs: dict) -> dict:
    """What JITFunction.run adds to a launch's kwargs before binding (it grew per release)."""
    from triton import knobs

    kwargs = dict(kwargs)
    kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):  # 3.6+, 3.9+
        if hasattr(knobs.compilation, name):
            kwargs[name] = getattr(knobs.compilation, name)
    return kwargs


def bind_launch(fn: Any, target: Any, args: tuple, kwargs: dict) -> tuple[Any, dict, dict, dict]:
    """(options, signature, constexprs, attrs) exactly as a launch of `fn` on `target` would
    specialise them (ints == 1 and None become constexpr, 16-divisible ints and pointers get
    tt.divisibility), using Triton's own binder, so no GPU is needed."""
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    kwargs = _launch_kwargs(fn, kwargs)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    if hasattr(fn, "_pack_args"):  # 3.6+
        return fn._pack_args(backend, kwargs, bound, specialization, options)
    from triton._utils import find_paths_if, get_iterable_path

    options = backend.parse_options(kwargs)
    names = [p.name for p in fn.params]
    types = [s[0] for s in specialization]
    for k in kwargs:
        if k not in options.__dict__ and k not in names:
            raise KeyError(f"Keyword argument {k} was specified but unrecognised")
    signature = dict(zip(names, types))
    paths = find_paths_if(types, lambda _, v: v == "constexpr")
    constexprs = {p: get_iterable_path(list(bound.values()), p) for p in paths}
    attrvals = [s[1] for s in specialization]
    paths = find_paths_if(attrvals, lambda _, x: isinstance(x, str))
    attrs = {p: backend.parse_attr(get_iterable_path(attrvals, p)) for p in paths}
    return options, signature, constexprs, attrs


def is_gluon(fn: Any) -> bool:
    """A @gluon.jit function (Triton 3.5+), whose layouts, partitions and warps are its own."""
    return bool(getattr(fn, "is_gluon", lambda: False)())


def ast_source(fn: Any, signature: dict, constexprs: dict, attrs: dict) -> Any:
    """What the compiler takes for `fn`: Gluon's source for a @gluon.jit function (its layouts
    are explicit: it enters at TTGIR), else Triton's."""
    if is_gluon(fn):
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, signature, constexprs, attrs)
    from triton.compiler import ASTSource

    return ASTSource(fn, signature, constexprs, attrs)


def cross_compile(fn: Any, arch: int, args: tuple, kwargs: dict) -> Any:
    """Compile a launch of `fn` for sm_<arch> without a GPU; returns a CompiledKernel."""
    import triton

    target = gpu_target(arch)
    options, signature, constexprs, attrs = bind_launch(fn, target, args, kwargs)
    src = ast_source(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__)


def compile_bound(fn: Any, arch: int, bound: tuple[dict, dict, dict, dict]) -> Any:
    """Compile what `bind_launch` gave, as (options.__dict__, signature, constexprs, attrs): plain
    data a process pool can send to a worker that holds the same `fn`."""
    import triton

    options, signature, constexprs, attrs = bound
    src = ast_source(fn, signature, constexprs, attrs)
    return triton.compile(src, target=gpu_target(arch), options=options)


def prime_compiler(arch: int) -> None:
    """Fill the process-wide caches every compile and every first launch reads: the hash of
    Triton's own sources and library (`triton_key`: 0.3 s of hashing), ptxas's version, and the
    code generator's import. Each compile worker calls it as it starts: without it the worker's
    first compile paid 0.4 s more than the next."""
    try:
        from triton.runtime.cache import triton_key  # 3.5+
    except ImportError:
        from triton.compiler.compiler import triton_key  # type: ignore[no-redef]  # 3.4
    from triton.compiler import code_generator, make_backend  # noqa: F401

    triton_key()
    make_backend(gpu_target(arch)).hash()


def cross_archs() -> list[int]:
    """The sm_XX archs this Triton's ptxas accepts (Blackwell's 100 and 120 where it has them)."""
    import re
    import subprocess

    text = subprocess.run(
        [tool_path("ptxas"), "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    return sorted({int(a) for a in re.findall(r"\bsm_(\d+)a?\b", text)})


def warmup(fn: Any, args: tuple, kwargs: dict) -> Any:
    """Compile for the current GPU through the launch cache and load it, so n_regs/n_spills are
    set. `warmup` moved from JITFunction (3.4, 3.5) to KernelInterface (3.6+): both reach it."""
    kernel = fn.warmup(*args, grid=(1,), **kwargs)
    kernel._init_handles()  # private in every release; loads the module, reads the attributes
    return kernel


def shared_bytes(metadata: Any) -> int:
    """The dynamic shared memory Triton asks for at launch."""
    return int(getattr(metadata, "shared", 0) or 0)


def autotune_configs(configs: list[Any], interpreter_config: Any) -> list[Any]:
    """The configs to give `@triton.autotune`: all of them, or only `interpreter_config` when
    kernels run in Triton's interpreter (TRITON_INTERPRET=1).

    With several configs the autotuner times them with the GPU's event timer, which the
    interpreter lacks ("0 active drivers"); a single config is launched untimed. A small tile
    there also keeps CPU runs short. Triton reads the variable when `@triton.jit` decorates, so
    call this at import time, where the decorators run.
    """
    flag = os.environ.get("TRITON_INTERPRET", "").strip().lower()
    return [interpreter_config] if flag in ("1", "true", "on", "yes") else list(configs)


def tensor_descriptor() -> Any:
    """Triton's host-side TMA descriptor class (`TensorDescriptor`, 3.4+), or None without it."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


def gluon_hopper_ws() -> bool:
    """Whether this Triton's Gluon specializes warps on Hopper in the form the library's
    kernels use: `warp_specialize(functions_and_args, worker_num_warps, worker_num_regs)` with
    `warpgroup_mma` (3.6+; 3.5 takes the partitions' functions and arguments apart)."""
    try:
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma  # noqa: F401
    except ImportError:
        return False
    return next(iter(inspect.signature(gl.warp_specialize).parameters), "") == "functions_and_args"


def gluon_tma_copies() -> tuple[Any, Any]:
    """Gluon's Hopper TMA (load, store): `async_load`/`async_store` from 3.8, before them
    `async_copy_global_to_shared`/`async_copy_shared_to_global` (3.9 removed the older names)."""
    from triton.experimental.gluon.language.nvidia.hopper import tma

    load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    return load, getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


def nvml_module() -> Any:
    """NVIDIA's NVML bindings (nvidia-ml-py, imported as `pynvml`; torch's CUDA wheels bring
    them), or None where they are not installed."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def nvml_index(device: int) -> int:
    """NVML's index of torch's CUDA device `device`: NVML numbers every GPU of the host, torch
    only those CUDA_VISIBLE_DEVICES names, in its order (a private helper of torch.cuda)."""
    import torch

    return torch.cuda._get_nvml_device_index(device)


def clock_event_reasons(nvml: Any, handle: Any) -> int:
    """The clock-event reasons bitmask of the device: `nvmlDeviceGetCurrentClocksEventReasons`,
    named `...ThrottleReasons` in bindings before NVML 12.2."""
    get = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    return int((get or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)(handle))
