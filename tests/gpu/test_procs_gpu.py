"""A profiled job ends with its command under the real ncu and nsys (run on the GPU host): the
job's child is the profiler's child, and the lifeline reaches it only if the tool passes its
fds on; where it does not, the child says so in the log and ends at its own timeout."""

from __future__ import annotations

import uuid

import pytest
from test_faults_procs import gone, group, kill_marked, marked, start_hang

from workbench.run.lifeline import LATE_S

TIMEOUT_S = 30


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["ncu", "nsys"])
def test_a_profiled_job_ends_when_the_cli_is_killed(tmp_path, tool):
    value = uuid.uuid4().hex
    try:
        args = ["profile", "--tool", tool, "--case", "64:float32", "--timeout", str(TIMEOUT_S)]
        proc, child = start_hang(args, value, tmp_path, WORKBENCH_DEVICE="cuda")
        proc.kill()
        proc.wait(timeout=30)
        [log] = (tmp_path / "reports" / "runs").glob("*/log.txt")
        passed_on = "the runner's pipe did not reach this process" not in log.read_text()
        print(f"{tool} passes the lifeline on: {passed_on}")
        deadline = 60 if passed_on else TIMEOUT_S + LATE_S + 60
        assert not gone(lambda: group(child) + marked(value), deadline)
    finally:
        kill_marked(value)
