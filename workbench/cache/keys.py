"""The one place for Triton's cache-key recipes, per version (3.4 to 3.9).

The recipes are pure string functions, so a key recorded under one Triton can be checked under
another; `cache.live` asks the installed Triton for each component (child processes only). Kept
apart from runtime/compat because the recipes
are the doctor's own subject: each is tested against caches that real Triton versions wrote.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any

GLOBAL_CONSTEXPR_IN_KEY = (3, 5)
"""From 3.5 `JITFunction.cache_key` covers the global `tl.constexpr` values a kernel reads."""
UNKNOWN_KEY_NAMES_RAISE = (3, 9)
"""Up to 3.8 unknown names in `key`/`reset_to_zero`/`restore_value` are dropped silently."""
MISSING_BINARY_RAISES_UNTIL = (3, 7)
"""Up to 3.7 a `.json` whose binary is gone raises `KeyError: 'cubin'` on every run."""
INSPECTION_HOOK_IN_KEY = (3, 7)
"""From 3.7 a set `add_stages_inspection_hook` appends its own key to the compile key."""


def dirname(digest: str) -> str:
    """The cache directory of a key's sha256 hex digest (base32 from Triton 3.3)."""
    return base64.b32encode(bytes.fromhex(digest)).decode().rstrip("=")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compile_key(
    triton_key: str,
    src_hash: str,
    backend_hash: str,
    options_hash: str,
    env_vars: str,
    inspection_key: str = "",
) -> str:
    """`triton.compile`'s key: 3.4 compiler.py, 3.5+ runtime/cache.py `get_cache_key`."""
    return f"{triton_key}-{src_hash}-{backend_hash}-{options_hash}-{env_vars}{inspection_key}"


def autotune_key(
    triton_key: str,
    backend_hash: str,
    fn_cache_key: str,
    env_vars: str,
    tuning_key: tuple,
    configs: Sequence[str],
) -> str:
    """`Autotuner.check_disk_cache`'s key (unchanged 3.4 to 3.9); `configs` are `str(Config)`
    of the pruned configs, in order."""
    parts = [triton_key, backend_hash, fn_cache_key, env_vars, str(tuning_key)]
    return "-".join(parts + list(configs))


def tuning_key_from_file(values: list) -> tuple:
    """The tuple Triton tuned for, from the `key` list an `.autotune.json` stores."""
    return tuple(values)


def tuning_key(named_args: dict[str, Any], key_names: Sequence[str]) -> tuple:
    """`Autotuner.run`'s tuning key: key-argument values (unknown names dropped, as Triton
    does), then `str(dtype)` of every argument that has one, in argument order."""
    key = [named_args[k] for k in key_names if k in named_args]
    key += [str(v.dtype) for v in named_args.values() if hasattr(v, "dtype")]
    return tuple(key)


def version_tuple(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)
