"""Finding 4 (broken and dead entries) on real caches, and clearing: dry run, exact removal,
refusal outside the cache directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import triton
from conftest import FIXTURES

from workbench.cache import clear, findings, scan
from workbench.diagnosis.finding import Finding
from workbench.runtime.errors import WorkbenchError

pytestmark = pytest.mark.versions  # CI runs these under every Triton release

MAKE = FIXTURES / "cache_versions" / "make.py"


def later() -> float:
    """A clock past the busy window of entries made just now (read when a test runs: the
    module is imported minutes before its tests when the whole suite runs)."""
    return time.time() + 2 * clear.BUSY_S


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("made")
    subprocess.run([sys.executable, str(MAKE), str(out)], check=True, capture_output=True)
    return out / "cache"


@pytest.fixture
def cache(made, tmp_path) -> Path:
    """A private copy of a real cache; group files rewritten to point into the copy, as
    Triton would have written them there."""
    root = tmp_path / "cache"
    shutil.copytree(made, root)
    for group in root.glob("*/__grp__*.json"):
        group.write_text(group.read_text().replace(str(made), str(root)))
    return root


def key(tag: str) -> str:
    """A folder name as Triton names a key (52 base32 characters)."""
    return (tag.upper() * 52)[:52]


def ids(root: Path, installed: str = triton.__version__) -> set[str]:
    """Findings' ids, by default as the Triton that made `made` (the one running) reads them."""
    return {f.id for f in findings.scan_findings(scan.scan(str(root)), installed, now=later())}


def compiled_dir(root: Path) -> Path:
    return next(p.parent for p in root.glob("*/scale_kernel.cubin"))


def test_a_healthy_cache_has_no_findings(cache):
    found = scan.scan(str(cache))
    [c] = found.compiled
    assert (c.name, c.backend, c.arch, c.num_warps, c.problems) == (
        "scale_kernel",
        "cuda",
        90,
        1,
        [],
    )
    assert found.tuned[0].best == 0 and found.total_size > c.size
    assert ids(cache) == set()


def test_missing_cubin(cache):
    (compiled_dir(cache) / "scale_kernel.cubin").unlink()
    assert ids(cache) == {"missing-binary"}
    f = {x.id: x for x in findings.scan_findings(scan.scan(str(cache)), "3.4.0")}
    assert "KeyError: 'cubin'" in f["missing-binary"].title
    assert "recompiles" in findings.scan_findings(scan.scan(str(cache)), "3.9.0")[0].title


def test_leftovers_fire_and_a_live_write_does_not(cache):
    old = time.time() - 2 * findings.TMP_GRACE_S
    dead = cache / key("A") / "tmp.pid_999999999_abc"
    dead.mkdir(parents=True)
    (dead / "x.json").write_text("{}")
    os.utime(dead, (old, old))
    live = compiled_dir(cache) / f"tmp.pid_{os.getpid()}_def"
    live.mkdir()
    os.utime(live, (old, old))
    (cache / key("E")).mkdir()
    (cache / key("P")).mkdir()
    (cache / key("P") / "k.source").write_text("module {}")
    found = findings.scan_findings(scan.scan(str(cache)), triton.__version__, now=later())
    f = {x.id: x for x in found}
    assert set(f) == {"leftover-tmp", "leftover-empty", "leftover-partial"}
    # not the live one
    assert f["leftover-tmp"].evidence["remove"] == [f"{key('A')}/tmp.pid_999999999_abc"]


def test_moved_cache_and_other_triton(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(FIXTURES / "cache_versions" / "triton_3.4" / "cache", root)
    assert ids(root, "3.9.0") == {"group-elsewhere", "other-triton"}
    assert ids(root, "3.4.0") == {"group-elsewhere"}


def test_unreadable_autotune_file(cache):
    next(cache.glob("*/*.autotune.json")).write_text("{not json")
    assert ids(cache) == {"autotune-unreadable"}


def test_missing_and_unreadable_roots(tmp_path):
    with pytest.raises(WorkbenchError) as e:
        scan.scan(str(tmp_path / "nope"))
    assert e.value.problem.kind == "cache-missing" and "--dir" in e.value.problem.remedy


def test_clear_dry_run_then_exactly_the_stale(cache):
    broken = compiled_dir(cache)
    (broken / "scale_kernel.cubin").unlink()
    (cache / key("E")).mkdir()
    before = sorted(str(p) for p in cache.rglob("*"))
    f = findings.scan_findings(scan.scan(str(cache)), "3.9.0", now=later())
    plan = clear.plan(f, stale_only=True, autotune_only=False)
    assert sorted(r.path for r in plan) == sorted([key("E"), broken.name])
    dry = clear.execute(str(cache), plan, dry_run=True)
    assert dry.removed == [] and sorted(str(p) for p in cache.rglob("*")) == before
    done = clear.execute(str(cache), plan, dry_run=False, now=later())
    assert sorted(done.removed) == sorted(r.path for r in plan)
    assert not (cache / key("E")).exists() and not compiled_dir_exists(cache)
    assert len(list(cache.glob("*/*.autotune.json"))) == 1  # the healthy entry stays
    assert not list(cache.glob(clear.TRASH_PREFIX + "*"))


def compiled_dir_exists(root: Path) -> bool:
    return any(root.glob("*/scale_kernel.json"))


def test_clear_skips_what_was_just_written(cache):
    (cache / key("E")).mkdir()
    plan = clear.plan(
        findings.scan_findings(scan.scan(str(cache)), "3.9.0", now=later()), True, False
    )
    done = clear.execute(str(cache), plan, dry_run=False)
    assert done.removed == [] and "written" in done.skipped[0]["why"]
    assert (cache / key("E")).exists()


def test_clear_refuses_outside_the_cache(cache, tmp_path):
    victim = tmp_path / "precious"
    victim.mkdir()
    (cache / "LINK").symlink_to(victim)
    for rel in ("../precious", "LINK", ".", str(victim)):
        with pytest.raises(WorkbenchError) as e:
            clear.execute(str(cache), [clear.Removal(rel, 0, "x")], dry_run=False, now=later())
        assert e.value.problem.kind == "outside-cache"
    assert victim.exists()


def test_autotune_only(cache):
    remove = [compiled_dir(cache).name, "D/k.autotune.json"]
    f = [Finding("x", "x", "medium", {"detail": "", "remove": remove, "stale": True})]
    assert [r.path for r in clear.plan(f, True, True)] == ["D/k.autotune.json"]


def test_scan_reads_the_workbench_per_file_caches(cache, tmp_path):
    root = tmp_path / "root"
    (root / "workbench").mkdir(parents=True)
    shutil.copytree(cache, root / "workbench" / "0123456789abcdef")
    found = scan.scan(str(root))
    assert [c.dir.split("/")[:2] for c in found.compiled] == [["workbench", "0123456789abcdef"]]
    assert json.loads(json.dumps(found.to_dict()))["tuned"][0]["kernel"] == "scale_kernel"


def test_changed_since(tmp_path):
    from workbench.catalog.freshness import changed_since

    f = tmp_path / "k.py"
    f.write_text("x = 1")
    shown = time.time() + 1
    assert not changed_since(str(f), shown)
    os.utime(f, (shown + 5, shown + 5))
    assert changed_since(str(f), shown)
    assert changed_since(str(tmp_path / "gone.py"), shown)
