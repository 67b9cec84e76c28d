"""`K=V,...` config selectors for `ir` and `resources` matched against the launches a kernel
makes (pure; the grammar is `runtime.grammar.parse_settings`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""Compile options a config may set beside its constexprs."""
SHORT = {"num_warps": "w", "num_stages": "s", "num_ctas": "ctas"}
"""Options written as a letter and their value in short names (w8 s3)."""
_BLOCK = re.compile(r"^(?:(?:BLOCK|TILE)(?:_SIZE)?_|B)([A-Z])$", re.IGNORECASE)


def split_options(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config's flat values as (constexprs, compile options)."""
    constexprs = {k: v for k, v in values.items() if k not in OPTION_NAMES}
    return constexprs, {k: v for k, v in values.items() if k in OPTION_NAMES}


def matches(values: dict[str, Any], selector: dict[str, Any]) -> bool:
    """True when every selected key has that value (compared as text: 8 == '8')."""
    return all(k in values and str(_plain(values[k])) == str(v) for k, v in selector.items())


def _plain(v: Any) -> Any:
    return v.value if hasattr(v, "value") else v


def label(values: dict[str, Any]) -> str:
    return ",".join(f"{k}={_plain(v)}" for k, v in values.items())


def shared_values(configs: Sequence[dict | None]) -> dict:
    """The K=V values every config has alike (of two or more): said once, so that each config
    is named by what differs (full labels grew too wide to tell configs apart)."""
    values = [c or {} for c in configs]
    if len(values) < 2:
        return {}
    return {k: v for k, v in values[0].items() if all(k in o and o[k] == v for o in values)}


def short_name(values: dict[str, Any], shared: dict | None = None) -> str:
    """A config by what it does not share: BLOCK_M=128, num_warps=4 as `BM128 w4`, other names
    as K=V; every value when it shares them all."""
    own = {k: v for k, v in values.items() if k not in (shared or {})} or values
    return " ".join(_short(k, _plain(v)) for k, v in own.items())


def short_legend(configs: Sequence[dict | None]) -> str:
    """What the short names abbreviate, for those the configs use: `BM = BLOCK_M, w = num_warps`."""
    names = dict.fromkeys(k for c in configs for k in c or {})
    said = [f"{_short(k, '')} = {k}" for k in names if _short(k, "") != f"{k}="]
    return ", ".join(said)


def block_axis(name: str) -> str | None:
    """The axis a block-size parameter tiles: BLOCK_M, BLOCK_SIZE_M, TILE_M, BM -> "M"."""
    found = _BLOCK.match(name)
    return found.group(1).upper() if found else None


def _short(name: str, value: Any) -> str:
    if name in SHORT:
        return f"{SHORT[name]}{value}"
    axis = block_axis(name)
    return f"B{axis}{value}" if axis else f"{name}={value}"
