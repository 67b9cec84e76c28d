"""From the long tables of an ncu report to what a person reads: one `NcuLaunch` per launch
(`ncumetrics`: the fields name the metrics they read), hot lines."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from workbench.profilers.ncumetrics import NcuLaunch

if TYPE_CHECKING:
    import pandas as pd

    from workbench.profilers.ncureport import NcuProfile

# Source-level counters worth a column in the per-line view (when the report has them).
LINE_ORDER = ("smsp__pcsamp_sample_count", "inst_executed")


def kernel_launches(profile: NcuProfile, top_lines: int) -> list[NcuLaunch]:
    """One `NcuLaunch` per profiled launch: its metrics read into the fields, the rules that
    fired on it and its `top_lines` hottest source lines."""
    by_launch = {
        launch: dict(zip(group["metric"], group["value"]))
        for launch, group in profile.metrics.groupby("launch")
    }
    rules, lines = profile.rules, profile.lines()
    out = []
    for info in profile.launches:
        n = info["launch"]
        fired = rules[(rules["launch"] == n) & (rules["type"] != "OK")] if len(rules) else rules
        said = [
            {k: _clean(v) for k, v in r.items() if k not in ("launch", "range", "kernel")}
            for r in fired.to_dict("records")
        ]
        hot = None
        if len(lines):
            hot = [
                {k: _clean(v) for k, v in h.items() if k not in ("launch", "kernel") and v != 0}
                for h in lines[lines["launch"] == n].head(top_lines).to_dict("records")
            ]
        launch = NcuLaunch.measured(info, by_launch.get(n, {}), said, hot)
        out.append(replace(launch, **{f.name: _clean(getattr(launch, f.name)) for f in READ}))
    return out


READ = [f for f in fields(NcuLaunch) if f.name not in ("rules", "hot_lines")]
"""The fields `kernel_launches` reads from ncu's values (numpy scalars, NaN), made JSON-safe."""


def line_table(source: pd.DataFrame, sources: dict[str, str], launch: int | None) -> pd.DataFrame:
    """Per (file, line): every source-level counter as a column, with the line's code.

    Triton inlines `tl.sum` and friends, so their counters land in triton/language/*.py: those
    rows keep their own file (origin "triton") rather than being guessed onto a caller.
    """
    import pandas as pd

    if source.empty:
        return pd.DataFrame(columns=["launch", "kernel", "file", "line", "origin", "code"])
    df = source if launch is None else source[source["launch"] == launch]
    wide = df.pivot_table(
        index=["launch", "kernel", "file", "line"],
        columns="metric",
        values="value",
        aggfunc="sum",
        fill_value=0,
    ).reset_index()
    wide.columns.name = None
    wide["origin"] = ["triton" if "/triton/" in f else "kernel" for f in wide["file"]]
    wide["code"] = [_code(sources, f, int(n)) for f, n in zip(wide["file"], wide["line"])]
    order = [c for c in LINE_ORDER if c in wide.columns]
    if order:
        wide = wide.sort_values(order, ascending=False)
    return wide.reset_index(drop=True)


def _code(sources: dict[str, str], file: str, line: int) -> str:
    text = sources.get(file)
    if text is None:
        try:
            with open(file, errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        sources[file] = text
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python numbers."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def ncu_dict(profile: NcuProfile, top_lines: int) -> dict:
    """The JSON form of an ncu report: per launch the key facts, rule results and hot lines
    (the findings are the diagnosis's: `diagnosis.diagnose_profile`)."""
    return {
        "tool": "ncu",
        "file": profile.path,
        "reader": profile.reader,
        "launches": len(profile.launches),
        "metrics": int(profile.metrics["metric"].nunique()) if len(profile.metrics) else 0,
        "kernels": [k.to_dict() for k in kernel_launches(profile, top_lines)],
    }
