"""`K=V,...` config selectors for `ir` and `resources` (pure; the parent validates, the child
matches them against the launches it found)."""

from __future__ import annotations

from typing import Any

from workbench.runtime.errors import fail


def _value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


def parse_config(text: str) -> dict[str, Any]:
    """'BLOCK_M=128,num_warps=8' -> {'BLOCK_M': 128, 'num_warps': 8}."""
    values: dict[str, Any] = {}
    for part in (p for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise fail(
                "bad-config",
                f"{part!r} in --config is not KEY=VALUE",
                "write the config as K=V pairs separated by commas, e.g. BLOCK=1024,num_warps=8",
            )
        values[key.strip()] = _value(value)
    return values


def matches(values: dict[str, Any], selector: dict[str, Any]) -> bool:
    """True when every selected key has that value (compared as text: 8 == '8')."""
    return all(k in values and str(_plain(values[k])) == str(v) for k, v in selector.items())


def _plain(v: Any) -> Any:
    return v.value if hasattr(v, "value") else v


def label(values: dict[str, Any]) -> str:
    return ",".join(f"{k}={_plain(v)}" for k, v in values.items())
