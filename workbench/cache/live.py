"""The installed Triton's key components, fed to the recipes in `cache.keys` (imports triton:
child processes only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.cache import keys
from workbench.runtime import compat


def triton_key() -> str:
    try:
        from triton.runtime.cache import triton_key  # 3.5+
    except ImportError:
        from triton.compiler.compiler import triton_key  # type: ignore[attr-defined]  # 3.4
    return triton_key()


def env_vars() -> str:
    from triton._C.libtriton import get_cache_invalidating_env_vars

    return str(sorted(get_cache_invalidating_env_vars().items()))


def inspection_key() -> str:
    import triton
    from triton import knobs

    hook = getattr(knobs.runtime, "add_stages_inspection_hook", None)
    if hook is None or keys.version_tuple(triton.__version__) < keys.INSPECTION_HOOK_IN_KEY:
        return ""
    return hook()[0]


def target_backend(arch: int) -> Any:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    return make_backend(GPUTarget("cuda", arch, 32))


def compile_dir(fn: Any, bound: tuple[Any, dict, dict, dict], arch: int) -> str:
    """The directory `triton.compile` uses for a launch of `fn` bound (by compat.bind_launch)
    as (options, signature, constexprs, attrs) for sm_<arch>."""
    options, signature, constexprs, attrs = bound
    backend = target_backend(arch)
    src = compat.ast_source(fn, signature, constexprs, attrs)
    parsed = backend.parse_options(dict(options.__dict__, **src.parse_options()))
    key = keys.compile_key(
        triton_key(),
        src.hash(),
        backend.hash(),
        parsed.hash(),
        env_vars(),
        inspection_key(),
    )
    return keys.dirname(keys.sha256(key))


def autotune_dir(fn: Any, arch: int, tuning: tuple, configs: Sequence[Any]) -> str:
    """The directory `check_disk_cache` uses for `fn` (the @jit under the autotuner)."""
    key = keys.autotune_key(
        triton_key(),
        target_backend(arch).hash(),
        fn.cache_key,
        env_vars(),
        tuning,
        [str(c) for c in configs],
    )
    return keys.dirname(keys.sha256(key))
