"""Register spill with its way out: the launched config's cross-compiled neighbours (sweep rows,
`Facts.configs`) that do not spill, with their resources and, when timed, their time; their
labels and values are what `diagnose --try register-spill` measures."""

from __future__ import annotations

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text, limit
from workbench.diagnosis.registry import detector

USABLE = ("ok", "static")
"""Row statuses whose resources are real: compiled (and, for "ok", checked and timed)."""
LAUNCH_KNOBS = ("num_warps", "num_stages", "maxnreg")
"""Changes that keep the tile (the work and bytes of one program): tried before a new tile."""


@detector("register-spill")
def spill_alternatives(facts: Facts) -> list[Finding]:
    launched = next((r for r in facts.configs if r.get("launched")), None)
    res = (launched or {}).get("resources") or {}
    if launched is None or not res.get("spill_bytes"):
        return []
    alternatives = sorted(
        (r for r in facts.configs if r is not launched and _spill_free(r)),
        key=lambda r: _preference(launched, r),
    )
    shown = alternatives[: int(limit("register-spill", "alternatives"))]
    rows = [_alternative(launched, r) for r in shown]
    evidence = {
        "source": "configs",
        "config": launched["label"],
        "regs": res.get("regs"),
        "spill_bytes": res["spill_bytes"],
        "launched_ms": launched.get("ms"),
        "neighbours": len(facts.configs) - 1,
        "alternatives": rows,
    }
    title = (
        f"the launched config spills {res['spill_bytes']} bytes/thread ({res.get('regs')} "
        f"registers); {len(alternatives)} of its {evidence['neighbours']} neighbours do not"
    )
    gain = None
    if rows:
        best = rows[0]
        title += f": {best['change']} ({best['regs']} registers"
        if best.get("ms") and launched.get("ms"):
            gain = max(0.0, 1.0 - best["ms"] / launched["ms"])
            title += f", {best['ms']:.3g} ms vs {launched['ms']:.3g} ms"
        title += ")"
        evidence["try"] = ", ".join(r["change"] for r in rows)
    return [
        Finding(
            id="register-spill",
            title=title,
            severity="high",
            evidence=evidence,
            fix=fix_text("register-spill", evidence, "alternatives" if rows else None),
            gain=gain,
            fix_id="config" if rows else None,
        )
    ]


def _spill_free(r: dict) -> bool:
    res = r.get("resources") or {}
    return r.get("status") in USABLE and bool(res) and not res.get("spill_bytes")


def _preference(launched: dict, r: dict) -> tuple:
    """Timed ones fastest first; then those that keep the tile, fuller SMs, fewer registers."""
    res = r["resources"]
    keeps_tile = all(k in LAUNCH_KNOBS for k in _changed(launched, r))
    occupancy = (res.get("occupancy") or {}).get("percent") or 0.0
    return (r.get("ms") is None, r.get("ms") or 0.0, not keeps_tile, -occupancy, res.get("regs"))


def _changed(launched: dict, r: dict) -> dict:
    base = launched.get("values") or {}
    return {k: v for k, v in (r.get("values") or {}).items() if base.get(k) != v}


def _alternative(launched: dict, r: dict) -> dict:
    res = r["resources"]
    occupancy = res.get("occupancy") or {}
    changed = _changed(launched, r)
    return {
        "label": r["label"],
        "values": r.get("values") or {},
        "change": ", ".join(f"{k}={v}" for k, v in changed.items()) or r["label"],
        "regs": res.get("regs"),
        "spill_bytes": res.get("spill_bytes", 0),
        "shared_bytes": res.get("shared_bytes"),
        "occupancy": occupancy.get("percent"),
        "limiter": occupancy.get("limiter"),
        "ms": r.get("ms"),
    }
