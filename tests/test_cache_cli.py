"""`cache NAME` end to end: the entry the kernel is served, the same entry unreachable after an
edit of the kernel, `cache clear --stale-only` (dry run, then --yes) and the finding resolved."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import triton
from conftest import FAULTY, FIXTURES, cli

from workbench.cache.report import build_report
from workbench.cache.result import CacheReach
from workbench.catalog.discovery import discover

KERNEL = '''"""A tiny autotuned kernel for the cache doctor's end-to-end test."""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=2)]


@triton.autotune(configs=CONFIGS, key=["n"], cache_results=True)
@triton.jit
def tiny_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)  # EDIT


def double(x):
    out = torch.empty_like(x)
    tiny_kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, out, x.numel())
    return out


SPEC = KernelSpec(
    name="tiny_tuned",
    kernel_fn=double,
    reference_fn=lambda x: x * 2,
    make_inputs=lambda shape, dtype, device: (torch.randn(shape, dtype=dtype, device=device),),
    shapes={"check": [(1000,)]},
    dtypes=("float32",),
    jit=(tiny_kernel,),
    noncontig=False,
)
'''

KEY = [1000, "torch.float32", "torch.float32"]  # the tuning key of the check shape

# Triton's own Autotuner.check_disk_cache writes an entry per kernel file given, each file the
# kernel's source at one moment (sm_90 given as the target; the timings are placeholders: tuning
# needs a GPU), and prints the path of each entry written, relative to the cache root.
WRITE_ENTRIES = """
import importlib.util, json, os, sys
from types import SimpleNamespace
from triton.backends.compiler import GPUTarget
from triton.runtime import autotuner
target = GPUTarget("cuda", 90, 32)
autotuner.driver = SimpleNamespace(active=SimpleNamespace(get_current_target=lambda: target))
root = os.environ["TRITON_CACHE_DIR"]
def entries():
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}
for i, path in enumerate(sys.argv[2:]):
    spec = importlib.util.spec_from_file_location(f"k{i}", path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    t = mod.tiny_kernel
    def bench():
        t.configs_timings = {c: [0.02 - 0.01 * i] * 3 for i, c in enumerate(t.configs)}
    before = entries()
    t.check_disk_cache(tuple(json.loads(sys.argv[1])), t.configs, bench)
    [written] = entries() - before
    print(written)
"""


def cache(*args: str) -> dict:
    out = cli("cache", *args, "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


def unreachable(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["id"] == "autotune-unreachable"]


def test_served_then_unreachable_after_an_edit_then_cleared(tmp_path):
    """One cache holds two entries Triton wrote: one for the kernel's source (`entry`), one for
    the source after an edit of a comment (`later`). Before the edit the first is served and the
    second unreachable; after it, the first is the stale one, cleared; the second is served."""
    kernel = tmp_path / "tiny_tuned.py"
    kernel.write_text(KERNEL)
    edited = KERNEL.replace("# EDIT", "# edited")  # a comment is in the key too
    (tmp_path / "edited").mkdir()
    (tmp_path / "edited" / "tiny_tuned.py").write_text(edited)
    root = tmp_path / "triton-cache"
    root.mkdir()
    where = ("tiny_tuned", "--dir", str(root), "--path", str(kernel))
    env = {**os.environ, "TRITON_CACHE_DIR": str(root), "TRITON_INTERPRET": "0"}
    kernels = [str(kernel), str(tmp_path / "edited" / "tiny_tuned.py")]
    args = [sys.executable, "-c", WRITE_ENTRIES, json.dumps(KEY), *kernels]
    proc = subprocess.run(args, check=True, env=env, capture_output=True, text=True)
    entry, later = proc.stdout.split()
    assert Path(entry).parent != Path(later).parent

    served = cache(*where)
    reach = CacheReach.from_dict(served["reach"])  # the job's result, as the report carries it
    assert reach.to_dict() == served["reach"] and CacheReach.from_dict(reach.to_dict()) == reach
    [key] = reach.keys
    assert key["key"] == KEY
    by_path = {a["path"]: a for a in reach.autotune}
    assert sorted(by_path) == sorted([entry, later])
    assert by_path[entry]["reachable"] and by_path[entry]["inputs"] == key["inputs"]
    assert not by_path[later]["reachable"]  # the edited source's key leads elsewhere: here
    assert by_path[later]["expected_dir"] == Path(entry).parent.name
    [finding] = unreachable(served)
    assert finding["evidence"]["remove"] == [later]
    best = {t["dir"]: t["best"] for t in served["scan"]["tuned"]}
    assert best[str(Path(entry).parent)] == 1  # the lower p50 is what Triton serves

    kernel.write_text(edited)
    path = root / entry
    old = time.time() - 3600
    os.utime(path, (old, old))
    dry = cache("clear", *where, "--stale-only")
    [finding] = unreachable(dry)  # the report the clear plans from: after the edit
    assert finding["evidence"]["remove"] == [entry]
    assert [r["path"] for r in dry["clear"]["planned"]] == [entry] and path.exists()
    done = cache("clear", *where, "--stale-only", "--yes")
    assert done["clear"]["removed"] == [entry] and not path.exists()
    assert not path.parent.exists() and (root / later).exists()

    resolved = cache(*where)
    [key] = resolved["reach"]["keys"]
    assert key["key"] == KEY
    [kept] = resolved["reach"]["autotune"]
    assert kept["path"] == later and kept["reachable"] and kept["inputs"] == key["inputs"]
    assert unreachable(resolved) == []


def test_text_report_and_bad_dir(tmp_path):
    out = cli("cache", "--dir", str(tmp_path / "missing"))
    assert out.returncode == 2 and "does not exist" in out.stderr and "--dir" in out.stderr
    fixture = Path(__file__).parent / "fixtures" / "cache_versions" / "triton_3.4" / "cache"
    out = cli("cache", "--dir", str(fixture))
    assert out.returncode == 0 and "scale_kernel" in out.stdout and "group-elsewhere" in out.stdout


def test_a_cancel_while_the_keys_are_recomputed_keeps_the_scan(tmp_path, monkeypatch):
    """The cache job of a kernel whose wrapper hangs (its launches are recorded by running it)
    is killed by the cancel: the report keeps the scan and its findings, its problem the cancel."""
    root = tmp_path / "cache"
    shutil.copytree(FIXTURES / "cache_versions" / "triton_3.4" / "cache", root)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(root))
    entry = discover([str(FAULTY)]).find("fault_hang")
    cancel = threading.Event()

    def on_event(event: dict) -> None:
        if event.get("event") == "started":  # the child is about to run the wrapper
            threading.Timer(1.0, cancel.set).start()

    started = time.monotonic()
    report = build_report(str(root), entry, cancel=cancel, on_event=on_event)
    assert time.monotonic() - started < 60  # the job's own timeout is 600 s
    assert report["problem"]["kind"] == "cancelled" and report["reach"] is None
    assert report["scan"]["compiled"][0]["name"] == "scale_kernel"
    other = {"other-triton"} if triton.__version__ != "3.4.0" else set()  # the fixture's is 3.4.0
    assert {"group-elsewhere", *other} <= {f["id"] for f in report["findings"]}


def test_keys_the_job_sent_before_a_cancel_stay_in_the_report(tmp_path, monkeypatch):
    """The job sends the keys as soon as they are recomputed (before any re-timing): cancelled
    right then, the report still holds them."""
    kernel = tmp_path / "tiny_tuned.py"
    kernel.write_text(KERNEL)
    root = tmp_path / "triton-cache"
    root.mkdir()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(root))
    cancel = threading.Event()

    def on_event(event: dict) -> None:
        if event.get("event") == "keys":
            cancel.set()

    entry = discover([str(kernel)]).find("tiny_tuned")
    report = build_report(str(root), entry, cancel=cancel, on_event=on_event)
    assert report["problem"]["kind"] == "cancelled"
    [key] = report["reach"]["keys"]
    assert key["kernel"] == "tiny_kernel" and key["key"] == [1000, "torch.float32", "torch.float32"]
    assert report["reach"]["verify"] == [] and report["reach"]["summary"]["dead"] == 0


def test_a_report_cancelled_before_its_job_runs_none(tmp_path, monkeypatch):
    kernel = tmp_path / "tiny_tuned.py"
    kernel.write_text(KERNEL)
    monkeypatch.setenv("WORKBENCH_REPORTS", str(tmp_path / "reports"))
    cancel = threading.Event()
    cancel.set()
    entry = discover([str(kernel)]).find("tiny_tuned")
    report = build_report(
        str(FIXTURES / "cache_versions" / "triton_3.4" / "cache"), entry, None, False, cancel
    )
    assert report["problem"]["kind"] == "cancelled" and report["reach"] is None
    assert report["findings"] and not (tmp_path / "reports").exists()  # no job, no run folder
