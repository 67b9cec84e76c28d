"""How soon the TUI paints its kernel list, beside a minimal Textual app (Header, a 3-row
DataTable, Footer), each launched in a pseudo-terminal as a person would launch it.

The clock runs from the spawn to the first output that holds a row of the list (ANSI codes
stripped): for the workbench the third kernel's name (the kernel head shows the first), for the
minimal app its third row. Each app is launched once before the timed launches (its bytecode
written, its files in the page cache: a person's second launch). Launches alternate between the
apps so both see the same load; the medians and their ratio are printed (the goal: the
workbench within 1.2x of the minimal app).
It also checks that the UI process, all its tabs imported, has imported neither torch nor triton.

    python benchmarks/tui_startup.py [--runs 7] [--path kernels]
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


def ui_imports_heavy(paths: list[str]) -> list[str]:
    """torch or triton, if the UI process has imported them with every tab loaded."""
    code = (
        "import sys; import workbench.tui.app, workbench.tui.commands\n"
        "from workbench.tui.tabs import TABS, pane_class\n"
        "[pane_class(t) for t in TABS]\n"
        "print(' '.join(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="launches of each app (default 7)")
    parser.add_argument("--path", action="append", default=[], help="kernels (default: ./kernels)")
    args = parser.parse_args()
    kernels = discover(args.path).kernels
    if len(kernels) < 3:
        raise SystemExit("needs a folder with at least 3 kernels (the marker is the third)")
    env = {**os.environ, "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a person's Python keeps its compiled modules
    env.setdefault("WORKBENCH_REPORTS", str(ROOT / "reports"))
    paths = [a for p in args.path for a in ("--path", p)]
    apps = {
        "minimal Textual app": ([sys.executable, "-c", MINIMAL], "minimal-row-3"),
        "python -m workbench": ([sys.executable, "-m", "workbench", *paths], kernels[2].name),
        "python -m workbench.tui": (
            [sys.executable, "-m", "workbench.tui", *paths],
            kernels[2].name,
        ),
    }
    for command, marker in apps.values():  # bytecode written, files cached: a second launch
        painted_after(command, marker, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in apps}
    for _ in range(args.runs):
        for name, (command, marker) in apps.items():
            times[name].append(painted_after(command, marker, env))
    wall0 = statistics.median(w for w, _ in times["minimal Textual app"])
    cpu0 = statistics.median(c for _, c in times["minimal Textual app"])
    print(f"first paint of the list, {args.runs} launches each, {COLUMNS}x{ROWS} pty, medians:")
    for name, found in times.items():
        wall = statistics.median(w for w, _ in found)
        cpu = statistics.median(c for _, c in found)
        print(
            f"  {name:<24} wall {wall:.3f} s ({min(w for w, _ in found):.3f}-"
            f"{max(w for w, _ in found):.3f}) {wall / wall0:.2f}x minimal;  "
            f"CPU {cpu:.2f} s {cpu / cpu0:.2f}x"
        )
    heavy = ui_imports_heavy(args.path)
    said = f"imports {', '.join(heavy)}" if heavy else "no torch, no triton"
    print(f"UI process with every tab imported: {said}")
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())
