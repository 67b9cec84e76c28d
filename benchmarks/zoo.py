"""Run the zoo through the workbench as a user would and set each answer beside the expected one.

    python benchmarks/zoo.py --out DIR [--only NAME ...] [--steps check,diagnose,bench,sweep]
                             [--jobs N] [--resume]

For every kernel of zoo/expected.json it runs `python -m workbench STEP NAME --json --path zoo`
(sweep for the autotuned ones only; bench and the sweep's timings need a GPU, so without one
bench is left out, the sweep is the static one, and only the kernels Triton's interpreter runs
in seconds are checked and diagnosed) and writes DIR/zoo.json (each command's exit
status, seconds and JSON output) and DIR/zoo.md: per kernel the verdict on the given inputs and
on the derived ones, the roofline placement and its source, the first finding above info, the
sweep's winner against Triton's pick, each as expected -> got, with a mark where they differ.
`--jobs N` runs N kernels at a time (the workbench's GPU lock gives their timings the GPU one at
a time); `--resume` keeps the kernels DIR/zoo.json already holds every step of.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the workbench of this checkout, installed or not

from workbench.diagnosis.pitfalls import pitfall  # noqa: E402

ZOO = ROOT / "zoo"
STEPS = ("check", "diagnose", "bench", "sweep")
SEVERITIES = ("high", "medium", "low", "info")
NOISE = 0.03
"""A sweep winner this close to Triton's pick (relative time) is the same answer."""


def run_step(step: str, name: str, timeout: float) -> dict:
    """One CLI command's exit status, wall seconds and parsed JSON (or the tail of its output)."""
    cmd = [sys.executable, "-m", "workbench", step, name, "--json", "--path", str(ZOO)]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": None, "seconds": round(time.monotonic() - start, 1), "error": "timed out"}
    out: dict = {"rc": proc.returncode, "seconds": round(time.monotonic() - start, 1)}
    try:
        out["json"] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out["error"] = (proc.stdout + proc.stderr)[-2000:]
    return out


def check_cases(check: dict | None) -> dict[str, bool]:
    """shape set/layout -> passed, from a check command's output."""
    result = (check or {}).get("result") or {}
    return {
        f"{c['shape_set']}/{c['layout']}": c["status"] == "passed" for c in result.get("cases", [])
    }


def verdict(check: dict | None) -> str:
    result = (check or {}).get("result") or {}
    return (result.get("summary") or {}).get("verdict") or (check or {}).get("error", "-")


def first_finding(diagnose: dict | None) -> str | None:
    """The pitfall row of the first finding above info of a diagnosis, by severity then its own
    rank (another tool's id for the row, e.g. the cache doctor's, counts as the row)."""
    findings = ((diagnose or {}).get("diagnosis") or {}).get("findings") or []
    order = {s: i for i, s in enumerate(SEVERITIES)}
    ranked = sorted(findings, key=lambda f: order.get(f["severity"], len(order)))
    above = [f for f in ranked if f["severity"] != "info"]
    return pitfall(above[0]["id"]).id if above else None


def roofline(diagnose: dict | None) -> tuple[str | None, str]:
    """(bound, its source and text) of a diagnosis' roofline placement."""
    roof = ((diagnose or {}).get("diagnosis") or {}).get("roofline") or {}
    if not roof:
        return None, "not placed"
    return roof.get("bound"), f"{roof.get('source', '?')}: {roof.get('text', '')}"


def sweep_pick(sweep: dict | None) -> tuple[str | None, str | None, float | None]:
    """(the sweep's best config, Triton's pick, the pick's time over the best's) on the first
    shape swept; None where the sweep timed nothing (a CPU host) or Triton picked nothing."""
    result = (sweep or {}).get("result") or {}
    for shape in (result.get("shapes") or {}).values():
        pick = (shape.get("triton") or {}).get("label")
        times = {r["label"]: r["ms"] for r in result.get("rows", []) if r.get("ms")}
        ratio = times[pick] / shape["best_ms"] if pick in times and shape.get("best_ms") else None
        return shape.get("best"), pick, ratio
    return None, None, None


def check_of(got: dict[str, dict]) -> dict | None:
    """The check command's output, else the check the diagnosis ran (the same report)."""
    if "check" in got:
        return got["check"].get("json")
    facts = ((got.get("diagnose") or {}).get("json") or {}).get("facts") or {}
    return {"result": facts["check"]} if facts.get("check") else None


def compare(name: str, expected: dict, got: dict[str, dict]) -> dict:
    """Each column of the table as (expected, got, agree)."""
    check = check_of(got)
    cases = check_cases(check)
    given = cases.get("check/contiguous")
    derived_expected = {k: v for k, v in expected["cases"].items() if k != "check/contiguous"}
    derived_got = {k: v for k, v in cases.items() if k != "check/contiguous"}
    diagnose = got.get("diagnose", {}).get("json")
    bound, source = roofline(diagnose)
    first = first_finding(diagnose)
    checked, diagnosed = check is not None, "diagnose" in got
    row = {
        "kernel": name,
        "given": (
            expected["correct_given"],
            given,
            _agree(checked, given == expected["correct_given"]),
        ),
        "derived": (
            derived_expected,
            derived_got,
            _agree(checked, derived_got == derived_expected),
        ),
        "verdict": verdict(check),
        "roofline": (
            expected["roofline"]["bound"],
            bound,
            _agree(bound, bound == expected["roofline"]["bound"]),
        ),
        "roofline_source": source,
        "first_finding": (
            expected["first_finding"],
            first,
            _agree(diagnosed, first == expected["first_finding"]),
        ),
    }
    if expected["autotuned"] and "sweep" in got:
        best, pick, ratio = sweep_pick(got["sweep"].get("json"))
        row["sweep"] = (
            expected["sweep"],
            (best, pick, ratio),
            _agree(ratio, ratio is not None and ratio <= 1 + NOISE),
        )
    return row


def _agree(ran: object, same: bool) -> bool | None:
    """Whether the answer matches; None where the step did not run here (or timed nothing)."""
    return same if ran is not None and ran is not False else None


def _cases(cases: dict[str, bool] | None) -> str:
    if not cases:
        return "-"
    wrong = [k for k, ok in cases.items() if not ok]
    return "all right" if not wrong else "wrong: " + ", ".join(wrong)


def _yes(value: bool | None) -> str:
    return {True: "correct", False: "NOT CORRECT", None: "-"}[value]


def markdown(rows: list[dict], host: str) -> str:
    mark = {True: "", False: " **x**", None: " (not run here)"}
    lines = [
        f"Zoo on {host}: expected -> got (**x**: they differ)",
        "",
        "| kernel | given inputs | derived inputs (check verdict) | roofline (source) "
        "| first finding above info | sweep winner vs Triton's pick |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        e, g, ok = r["given"]
        given = f"{_yes(e)} -> {_yes(g)}{mark[ok]}"
        e, g, ok = r["derived"]
        derived = f"{_cases(e)} -> {_cases(g)} ({r['verdict']}){mark[ok]}"
        e, g, ok = r["roofline"]
        roof = f"{e} -> {g or '-'}{mark[ok]} ({r['roofline_source']})"
        e, g, ok = r["first_finding"]
        first = f"{e or 'none'} -> {g or 'none'}{mark[ok]}"
        sweep = "-"
        if "sweep" in r:
            _, (best, pick, ratio), ok = r["sweep"]
            times = f", pick at {ratio:.3f}x the best" if ratio else ""
            sweep = f"{best or '-'} vs {pick or '-'}{times}{mark[ok]}"
        lines.append(f"| {r['kernel']} | {given} | {derived} | {roof} | {first} | {sweep} |")
    return "\n".join(lines) + "\n"


def _gpu() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    expected = json.loads((ZOO / "expected.json").read_text())["kernels"]
    names = args.only or sorted(expected)
    unknown = sorted(set(names) - set(expected))
    if unknown:
        parser.error(f"not zoo kernels: {', '.join(unknown)} (see zoo/expected.json)")
    gpu = _gpu() if os.environ.get("WORKBENCH_DEVICE") != "cpu" else None
    steps = [s for s in args.steps.split(",") if s in STEPS and (gpu or s != "bench")]
    args.out.mkdir(parents=True, exist_ok=True)
    saved = args.out / "zoo.json"
    raw: dict[str, dict] = json.loads(saved.read_text()) if args.resume and saved.exists() else {}
    lock = threading.Lock()

    def todo(name: str) -> list[str]:
        wanted = [s for s in steps if s != "sweep" or expected[name]["autotuned"]]
        if not gpu and not expected[name]["interpreter"]:  # hours in the interpreter, if it runs
            wanted = [s for s in wanted if s not in ("check", "diagnose")]
        return [s for s in wanted if s not in raw.get(name, {})]

    def run_kernel(name: str) -> None:
        for step in todo(name):
            out = run_step(step, name, args.timeout)
            print(f"{name} {step}: rc={out['rc']} {out['seconds']} s", flush=True)
            with lock:
                raw.setdefault(name, {})[step] = out
                saved.write_text(json.dumps(raw, indent=1))

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(run_kernel, names))
    rows = [compare(name, expected[name], raw.get(name, {})) for name in names]
    (args.out / "zoo.md").write_text(markdown(rows, gpu or "a host without a GPU"))
    differ = sum(any(v[2] is False for v in r.values() if isinstance(v, tuple)) for r in rows)
    print(f"{len(rows)} kernels, {differ} differ from the expected answer: {args.out / 'zoo.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
