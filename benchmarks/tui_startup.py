"""How soon the TUI paints its kernel list, beside a minimal Textual app (Header, a 3-row
DataTable, Footer), each launched in a pseudo-terminal as a person would launch it.

The clock runs from the spawn to the first output that holds a row of the list (ANSI codes
stripped): for the workbench the third kernel's name (the kernel head shows the first), for the
minimal app its third row. Each app is launched once before the timed launches (its bytecode
written, its files in the page cache: a person's second launch). Launches are interleaved, the
apps' order reversed every round, so that all see the same load and none always follows
another; printed per app: the median, p20 and p80 of the wall and CPU times, and the ratio of
its median to the minimal app's (the goal: the workbench within 1.2x).
It also checks that the UI process, all its tabs imported, has imported neither torch nor triton.

    python benchmarks/tui_startup.py [--runs 15] [--path kernels]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.catalog.discovery import discover  # noqa: E402

MINIMAL = """
from textual.app import App
from textual.widgets import DataTable, Footer, Header

class Minimal(App):
    def compose(self):
        yield Header()
        yield DataTable()
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns("name", "kind", "file")
        for i in range(1, 4):
            table.add_row(f"minimal-row-{i}", "kernel", f"kernels/k{i}.py")

Minimal().run()
"""
ANSI = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
COLUMNS, ROWS = 170, 45
TIMEOUT_S = 30.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def painted_after(command: list[str], marker: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning `command` on a fresh pseudo-terminal until `marker` is
    on it. CPU time is what a busy machine does not inflate as much as the wall clock."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        command,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    seen, found = b"", None
    try:
        while found is None and time.perf_counter() - start < TIMEOUT_S:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                seen += os.read(master, 65536)
            except OSError:  # the app exited before painting
                break
            if marker.encode() in ANSI.sub(b"", seen):
                found = time.perf_counter() - start, cpu_seconds(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    if found is None:
        tail = ANSI.sub(b"", seen)[-400:].decode(errors="replace")
        raise SystemExit(f"{' '.join(command)}: no {marker!r} within {TIMEOUT_S} s; saw: {tail}")
    return found


def ui_imports_heavy() -> list[str]:
    """torch or triton, if the UI process has imported them with every tab loaded."""
    code = (
        "import sys; import workbench.tui.app, workbench.tui.commands\n"
        "from workbench.tui.tabs import TABS, pane_class\n"
        "[pane_class(t) for t in TABS]\n"
        "print('imported:', *(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if out.returncode or not out.stdout.startswith("imported:"):
        raise RuntimeError(f"the UI modules did not import: {out.stderr}")
    return out.stdout.split()[1:]


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median, p20 and p80."""
    p20, _, _, p80 = statistics.quantiles(values, n=5, method="inclusive")
    return statistics.median(values), p20, p80


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="launches of each app (default 15)")
    parser.add_argument("--path", action="append", default=[], help="kernels (default: ./kernels)")
    args = parser.parse_args()
    kernels = discover(args.path).kernels
    if len(kernels) < 3:
        raise SystemExit("needs a folder with at least 3 kernels (the marker is the third)")
    env = {**os.environ, "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a person's Python keeps its compiled modules
    env.setdefault("WORKBENCH_REPORTS", str(ROOT / "reports"))
    paths = [a for p in args.path for a in ("--path", p)]
    marker = kernels[2].name
    apps = {
        "minimal Textual app": ([sys.executable, "-c", MINIMAL], "minimal-row-3"),
        "python -m workbench": ([sys.executable, "-m", "workbench", *paths], marker),
        "python -m workbench.tui": ([sys.executable, "-m", "workbench.tui", *paths], marker),
    }
    for command, mark in apps.values():  # bytecode written, files cached: a second launch
        painted_after(command, mark, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in apps}
    for n in range(args.runs):
        for name in list(apps)[:: 1 if n % 2 == 0 else -1]:
            times[name].append(painted_after(*apps[name], env))
    wall0 = statistics.median(w for w, _ in times["minimal Textual app"])
    cpu0 = statistics.median(c for _, c in times["minimal Textual app"])
    print(
        f"first paint of the list, {args.runs} launches each, interleaved, {COLUMNS}x{ROWS} pty: "
        "median (p20-p80), median / the minimal app's median"
    )
    for name, found in times.items():
        wall, w20, w80 = spread([w for w, _ in found])
        cpu, c20, c80 = spread([c for _, c in found])
        print(
            f"  {name:<24} wall {wall:.3f} s ({w20:.3f}-{w80:.3f}) {wall / wall0:.2f}x;  "
            f"CPU {cpu:.3f} s ({c20:.3f}-{c80:.3f}) {cpu / cpu0:.2f}x"
        )
    heavy = ui_imports_heavy()
    said = f"imports {', '.join(heavy)}" if heavy else "no torch, no triton"
    print(f"UI process with every tab imported: {said}")
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())
