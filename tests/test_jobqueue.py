"""A job's progress as the job bar shows it, from the events its child sends (no Textual)."""

from __future__ import annotations

from workbench.app.actions import Selection
from workbench.catalog.discovery import KernelEntry
from workbench.tui.jobqueue import RUNNING, Task


def _profile_task() -> Task:
    task = Task("profile", KernelEntry("vector_add", "vector_add.py", 1), Selection())
    task.state, task.started_at = RUNNING, 0.0
    return task


def test_a_profiled_child_counts_its_phases_as_steps():
    task = _profile_task()
    task.absorb({"event": "phase", "phase": "warmup", "range": "vector_add:1000:float32"})
    task.absorb({"event": "phase", "phase": "range", "range": "vector_add:1000:float32"})
    assert (task.done, task.total, task.step) == (2, 3, "range")
    assert "2/3 steps" in task.describe(now=1.0)


def test_waiting_for_the_gpu_is_shown_without_counting_a_step():
    """Another run holding the GPU lock makes the child wait: the bar says why, the count holds."""
    task = _profile_task()
    task.absorb({"event": "phase", "phase": "warmup", "range": "vector_add:1000:float32"})
    why = "another run holds the GPU (/tmp/workbench-gpu-0.lock)"
    task.absorb({"event": "phase", "phase": "waiting", "why": why})
    assert (task.done, task.total) == (1, 3)
    assert task.describe(now=1.0).endswith(why)


def test_a_check_that_ends_ok_with_a_wrong_kernel_says_not_correct():
    """The job bar said "check pitfall_tail: ok after 2.6 s" for a NOT CORRECT check."""
    from workbench.check.result import CaseResult, CheckReport
    from workbench.tui.jobqueue import DONE
    from workbench.views.finished import Finished

    task = Task("check", KernelEntry("pitfall_tail", "pitfall_tail.py", 1), Selection())
    task.state, task.started_at, task.ended_at = DONE, 0.0, 2.6
    case = CaseResult("regular", [8], "float32", "contiguous", "failed")
    wrong = CheckReport("pitfall_tail", "cpu", "interpreter", [case])
    task.finished = Finished("check", "pitfall_tail", "ok", wrong)
    assert task.describe() == "check pitfall_tail: NOT CORRECT after 2.6 s"
    case.status = "passed"
    assert task.describe() == "check pitfall_tail: ok after 2.6 s"
