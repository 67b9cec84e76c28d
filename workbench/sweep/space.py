"""The configs a sweep tries (pure): the kernel's own, a file's, or generated from its tile
parameters; each is a flat dict of constexpr values and compile options."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from workbench.ir.config import OPTION_NAMES, label
from workbench.runtime.errors import fail
from workbench.runtime.grammar import parse_settings

Values = dict[str, Any]
SPACES = ("own", "auto", "neighbours")
"""Named spaces; anything else is a file of configs."""
WARPS = (4, 8)
STAGES = (2, 3, 4)
TILE_MIN, TILE_MAX = 16, 256


def config_values(kwargs: dict, **options: Any) -> Values:
    """A triton.Config's kwargs and its options that are set, as one flat dict."""
    return {
        **kwargs,
        **{
            k: options[k]
            for k in OPTION_NAMES
            if options.get(k) is not None and not (k == "num_ctas" and options[k] == 1)
        },
    }


def key(values: Values) -> str:
    """The text that names a config in tables, files and `--resume`."""
    return label(values)


def from_file(path: str) -> list[Values]:
    """A JSON list of configs (flat `{"BLOCK_M": 128, "num_warps": 8}` or triton.Config's own
    `{"kwargs": {...}, "num_warps": 8}`), or a text file with one `K=V,...` per line."""
    file = Path(path)
    if not file.is_file():
        raise fail(
            "bad-space",
            f"--space {path}: no such file, and not one of {', '.join(SPACES)}",
            "name a JSON or K=V,... file of configs, or use --space own|auto",
        )
    text = file.read_text()
    try:
        if file.suffix == ".json":
            items = json.loads(text)
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ValueError("expected a list of objects")
            configs = [flat(i) for i in items]
        else:
            lines = [ln.strip() for ln in text.splitlines()]
            configs = [parse_settings(ln) for ln in lines if ln and not ln.startswith("#")]
    except (ValueError, TypeError) as exc:
        raise fail(
            "bad-space",
            f"{path} is not a list of configs: {exc}",
            'write a JSON list like [{"BLOCK_M": 128, "num_warps": 8}] or lines like '
            "BLOCK_M=128,num_warps=8",
            file=path,
        ) from exc
    if not configs:
        raise fail("bad-space", f"{path} holds no configs", "add at least one config", file=path)
    return configs


def flat(item: dict) -> Values:
    """A config as one flat dict, from triton.Config's own form (`{"kwargs": {...},
    "num_warps": 8}`, as Triton's autotune cache stores it) or from a flat one."""
    if isinstance(item.get("kwargs"), dict):
        return config_values(item["kwargs"], **{k: v for k, v in item.items() if k != "kwargs"})
    return dict(item)


def tile_params(values: Values) -> list[str]:
    """Constexpr tile sizes: BLOCK*/TILE* names holding a power of two >= 16."""
    return [
        k
        for k, v in values.items()
        if ("BLOCK" in k.upper() or "TILE" in k.upper())
        and type(v) is int
        and v >= TILE_MIN
        and not v & (v - 1)
    ]


def generate(base: Values, warps: tuple[int, ...] = WARPS, stages: tuple[int, ...] = STAGES):
    """Every tile parameter at half, the same and twice its value (16..256, or up to twice a
    larger base) x num_warps x num_stages, the base's other values kept."""
    tiles = tile_params(base)
    if not tiles:
        raise fail(
            "no-tile-parameters",
            f"no BLOCK*/TILE* constexpr with a power-of-two value among {sorted(base)}",
            "use --space own (the kernel's @triton.autotune configs) or a file of configs",
        )
    choices = [_sizes(base[t]) for t in tiles]
    out = []
    for sizes, w, s in itertools.product(itertools.product(*choices), warps, stages):
        out.append({**base, **dict(zip(tiles, sizes)), "num_warps": w, "num_stages": s})
    return out


def _sizes(value: int) -> list[int]:
    """Half, the same and twice: within a 2-D tile's 16..256, or up to twice a larger base (a
    one-dimensional BLOCK of thousands keeps its own range)."""
    top = TILE_MAX if value <= TILE_MAX else 2 * value
    return sorted({v for v in (value // 2, value, value * 2) if TILE_MIN <= v <= top})


MAXNREG = (128, 168)
"""Register caps worth a try: 128 lets a 4-warp block keep 4 blocks per SM, 168 three."""


def neighbours(base: Values) -> list[Values]:
    """The base config first, then every one-step move from it: twice or half the warps, a
    stage more or less, each tile parameter halved, a register cap (maxnreg). What a spill or
    an occupancy limit is fixed with, short of a whole sweep."""
    warps, stages = base.get("num_warps", 4), base.get("num_stages", 3)
    moves: list[Values] = [{"num_warps": w} for w in (warps * 2, warps // 2) if 1 <= w <= 16]
    moves += [{"num_stages": s} for s in (stages - 1, stages + 1) if 1 <= s <= 6]
    moves += [{t: base[t] // 2} for t in tile_params(base) if base[t] // 2 >= TILE_MIN]
    moves += [{"maxnreg": r} for r in MAXNREG if "maxnreg" not in base]
    out, seen = [base], {key(base)}
    for move in moves:
        values = {**base, **move}
        if key(values) not in seen:
            seen.add(key(values))
            out.append(values)
    return out


def autotune_snippet(configs: list[Values]) -> str:
    """The configs as the `configs=[...]` list to paste into @triton.autotune."""
    lines = []
    for values in configs:
        kwargs = {k: v for k, v in values.items() if k not in OPTION_NAMES}
        opts = ", ".join(f"{k}={values[k]}" for k in OPTION_NAMES if k in values)
        lines.append(f"    triton.Config({kwargs!r}, {opts}),")
    return "configs=[\n" + "\n".join(lines) + "\n]"
