"""Start a profiler around a job's child: `python -m workbench.profilers.launch TOOL ARGS CHILD`.

The job runner creates the run's folder only when it starts the child, so the profiler's output
path cannot be spelled in advance: `{run_dir}` in the tool's arguments is replaced here with the
child's `--run-dir`. The tool's own lines (`==PROF== Profiling …`) are passed on unchanged (the
runner keeps them in the run log) and also as `{"event": "tool"}` lines, so the user sees the
profiler's progress while it replays kernels. The job's lifeline is passed on to the tool, which
passes it on to the job's child.
"""

from __future__ import annotations

import json
import subprocess
import sys

from workbench.run import lifeline

PLACEHOLDER = "{run_dir}"


def substitute(argv: list[str]) -> list[str]:
    run_dir = argv[argv.index("--run-dir") + 1] if "--run-dir" in argv else "."
    return [a.replace(PLACEHOLDER, run_dir) for a in argv]


def main(argv: list[str]) -> int:
    cmd = substitute(argv)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        pass_fds=lifeline.passed_on(),
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        if not line.lstrip().startswith("{") and line.strip():
            sys.stdout.write(json.dumps({"event": "tool", "line": line.rstrip()}) + "\n")
        sys.stdout.flush()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
