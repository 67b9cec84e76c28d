"""The GPU lock really excludes another process, and says so to a waiting one."""

from __future__ import annotations

import subprocess
import sys
import time

from workbench.runtime import gpu_lock

WAITER = """
import sys, time
from workbench.runtime import gpu_lock
waited = []
with gpu_lock.exclusive("card-0", waited.append):
    print(f"{time.time()} {len(waited)}", flush=True)
"""


def test_a_second_process_waits_until_the_first_lets_go(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lock.LOCKS_ENV, str(tmp_path))
    with gpu_lock.exclusive("card-0"):
        child = subprocess.Popen([sys.executable, "-c", WAITER], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # the child is started and blocked by now
        assert child.poll() is None
        released = time.time()
    out, _ = child.communicate(timeout=60)
    entered, waited = out.split()
    assert float(entered) >= released
    assert waited == "1"  # on_wait was told


def test_another_card_is_not_held(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lock.LOCKS_ENV, str(tmp_path))
    with gpu_lock.exclusive("card-0"):
        done = subprocess.run(
            [sys.executable, "-c", WAITER.replace("card-0", "card-1")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.stdout.split()[1] == "0"


def test_device_names_make_safe_file_names(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lock.LOCKS_ENV, str(tmp_path))
    path = gpu_lock.lock_path("GPU-1a2b/../x y")
    assert path.parent == tmp_path and "/" not in path.name and " " not in path.name


def test_nothing_is_held_off_the_gpu(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lock.LOCKS_ENV, str(tmp_path))
    with gpu_lock.alone("cpu"):
        pass
    assert not list(tmp_path.iterdir())
