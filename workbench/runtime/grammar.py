"""The grammars of command-line values, one place for every command: a shape (`4096x4096`), a
case (`SHAPE[:DTYPE]`) and compile settings (`K=V,...`). Pure; a malformed value is a Problem.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.runtime.errors import fail

Shape = tuple[int, ...]
NO_SHAPE = ("", "inputs", "()")
"""How a case names "the shape the inputs decide" (the three-name contract)."""


USAGE = {"source": "usage"}
"""What these grammars refuse is always a command-line argument."""


def parse_shape(text: str, option: str = "--shape") -> Shape:
    """ "4096x4096", "4096,4096", "(4096, 4096)" or "268435456" -> (4096, 4096)."""
    parts = re.split(r"\s*[x,]\s*", text.strip().lower().strip("()[]").strip())
    remedy = f"write the sizes as positive integers joined by x, e.g. {option} 4096x4096"
    if not all(p.isdigit() for p in parts):
        raise fail("bad-shape", f"{option} {text!r} is not a list of integers", remedy, **USAGE)
    dims = tuple(int(p) for p in parts)
    if any(d <= 0 for d in dims):
        raise fail("bad-shape", f"{option} {text!r} has a size below 1", remedy, **USAGE)
    return dims


def shape_text(shape: list[int] | tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) or "-"


def parse_case(text: str, default_dtype: str | None) -> tuple[Shape, str | None]:
    """ "4096x1024", "4096x1024:float16", "1000,7:float32" or "inputs" -> (shape, dtype)."""
    shape, _, dtype = text.partition(":")
    dtype = dtype.strip() or default_dtype
    if shape.strip() in NO_SHAPE:
        return (), dtype
    return parse_shape(shape, "--case"), dtype


def parse_settings(text: str, flag: str = "--config") -> dict[str, Any]:
    """'BLOCK_M=128,num_warps=8' -> {'BLOCK_M': 128, 'num_warps': 8}; errors name `flag`."""
    values: dict[str, Any] = {}
    for part in (p for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise fail(
                "bad-config",
                f"{part!r} in {flag} is not KEY=VALUE",
                "write the config as K=V pairs separated by commas, e.g. BLOCK=1024,num_warps=8",
                **USAGE,
            )
        values[key.strip()] = setting_value(value)
    return values


def setting_value(text: str) -> Any:
    """A setting's value: a bool, None, an int, a float, else the text itself."""
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
