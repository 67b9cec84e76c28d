"""Which shapes can share an autotune key bucket (pure): a power-of-two bucketing of each shape
dimension that varies, as coarse as it can be while one config per bucket keeps every shape of
the bucket within `near` of its own best.

A dimension's finest buckets are (2^(c-1), 2^c], one per c; two shapes in one such bucket cannot
be told apart by any power-of-two boundary. Adjacent buckets of one dimension are merged, first
fit, while every bucket a merge makes has its config; for one varying dimension (a batch
size, say) this greedy sweep gives the fewest buckets.
"""

from __future__ import annotations

Shape = tuple[int, ...]
Runs = list[list[list[int]]]
"""Per varying dimension, its buckets: runs of consecutive power-of-two exponents."""


def key_buckets(ratios: dict[Shape, dict[str, float]], near: float) -> dict:
    """`ratios`: per shape, each timed config's time over that shape's best. Returns the varying
    dimensions, the buckets (each with its ranges, shapes, config and worst ratio) and a note;
    empty with fewer than two shapes."""
    shapes = sorted(s for s in ratios if ratios[s])
    if len(shapes) < 2:
        return {}
    if len({len(s) for s in shapes}) > 1:
        return {"dims": [], "buckets": [], "note": "the shapes differ in rank: no common key"}
    dims = [i for i in range(len(shapes[0])) if len({s[i] for s in shapes}) > 1]
    cells = {s: tuple(_exponent(s[i]) for i in dims) for s in shapes}
    runs: Runs = [[[c] for c in sorted({cells[s][k] for s in shapes})] for k in range(len(dims))]

    def cover(group: list[Shape]) -> tuple[str, float] | None:
        shared = set.intersection(*(set(ratios[s]) for s in group))
        fits = [k for k in shared if all(ratios[s][k] <= 1.0 + near for s in group)]
        if not fits:
            return None
        best = min(fits, key=lambda k: (sum(ratios[s][k] for s in group), k))
        return best, max(ratios[s][best] for s in group)

    def groups(runs: Runs) -> list[list[Shape]]:
        found: dict[tuple[int, ...], list[Shape]] = {}
        for s in shapes:
            at = tuple(_run_of(runs[k], c) for k, c in enumerate(cells[s]))
            found.setdefault(at, []).append(s)
        return list(found.values())

    merged = True
    while merged:
        merged = False
        now = {tuple(g) for g in groups(runs)}
        for k, dim_runs in enumerate(runs):
            for j in range(len(dim_runs) - 1):
                trial = [list(r) for r in runs]
                trial[k] = dim_runs[:j] + [dim_runs[j] + dim_runs[j + 1]] + dim_runs[j + 2 :]
                if all(cover(g) for g in groups(trial) if tuple(g) not in now):
                    runs, merged = trial, True
                    break
            if merged:
                break
    buckets = []
    for group in groups(runs):
        found = cover(group)
        at = [_run_of(runs[k], c) for k, c in enumerate(cells[group[0]])]
        buckets.append(
            {
                "ranges": [_range(runs[k][r]) for k, r in enumerate(at)],
                "shapes": [list(s) for s in group],
                "config": found[0] if found else None,
                "worst": found[1] if found else None,
            }
        )
    alone = [b["shapes"] for b in buckets if b["config"] is None]
    note = (
        f"no config keeps shapes {alone[0]} within {near:.0%} of their best, and no power-of-two "
        "boundary falls between them"
        if alone
        else ""
    )
    return {"dims": dims, "buckets": buckets, "note": note}


def _exponent(size: int) -> int:
    """c with 2^(c-1) < size <= 2^c (0 for 1)."""
    return (size - 1).bit_length()


def _run_of(runs: list[list[int]], c: int) -> int:
    return next(i for i, run in enumerate(runs) if c in run)


def _range(run: list[int]) -> list[int]:
    """The sizes a run of exponents covers, first and last."""
    return [1 if run[0] == 0 else 2 ** (run[0] - 1) + 1, 2 ** run[-1]]
