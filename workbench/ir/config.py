"""`K=V,...` config selectors for `ir` and `resources` matched against the launches a kernel
makes (pure; the grammar is `runtime.grammar.parse_settings`)."""

from __future__ import annotations

from typing import Any

OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""Compile options a config may set beside its constexprs."""


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
