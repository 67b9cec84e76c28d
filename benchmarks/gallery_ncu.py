"""What the gallery's diagnoses (benchmarks/gallery_gpus.sh, one JSON each in DEST) say of their
ncu step, profiled beside profiles on the host's other cards:
  failed DEST   the kernels whose profile was tried and failed, one a line (to take again);
  summary DEST  one line of the step's times, to compare with a card profiled alone (12-15 s on
                an H100), and one naming the diagnoses left without a profile."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def diagnoses(dest: Path) -> dict[str, dict]:
    """Each run's diagnosis JSON by its label (a run cut off left an empty or partial file)."""
    found = {}
    for path in sorted(dest.glob("*.json")):
        try:
            out = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(out, dict) and isinstance(out.get("diagnosis"), dict):
            found[path.stem] = out
    return found


def ncu_seconds(out: dict) -> float | None:
    """The ncu step's wall time, None where no profile was tried (no GPU, or cut off first)."""
    return next((s.get("seconds") for s in out.get("steps", []) if s.get("step") == "ncu"), None)


def missing(out: dict) -> dict:
    """The facts the diagnosis went without, and why."""
    return out["diagnosis"].get("missing") or {}


def failed(dest: Path) -> list[str]:
    """The kernels of plain diagnoses (labelled by their kernel) whose profile was tried and is
    missing: a fix tried (--try) profiles nothing, and spill's runs are taken anyway."""
    return [
        label
        for label, out in diagnoses(dest).items()
        if out["diagnosis"].get("kernel") == label
        and ncu_seconds(out) is not None
        and "ncu" in missing(out)
    ]


def summary(dest: Path) -> str:
    found = diagnoses(dest)
    took = [s for out in found.values() if (s := ncu_seconds(out)) is not None]
    without = [label for label, out in found.items() if "ncu" in missing(out)]
    line = "ncu: none profiled"
    if took:
        line = (
            f"ncu: {len(took)} profiled, median {statistics.median(took):.1f} s, "
            f"max {max(took):.1f} s"
        )
    return f"{line}\nncu missing in {len(without)}: {' '.join(without) or '-'}"


if __name__ == "__main__":
    what, dest = sys.argv[1], Path(sys.argv[2])
    print("\n".join(failed(dest)) if what == "failed" else summary(dest))
