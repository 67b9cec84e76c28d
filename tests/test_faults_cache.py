"""`cache` and `cache clear` pointed at folders that are not Triton caches, or at a real cache
with things planted in it that Triton never writes: nothing outside Triton's own files is read
or removed, through the CLI as a user types it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, cli
from test_cache_scan import key

from workbench.cache import clear, findings, layout, scan
from workbench.runtime.errors import WorkbenchError

MAKE = FIXTURES / "cache_versions" / "make.py"


def fake_home(root: Path) -> Path:
    """A home folder with what a user keeps in one; the shapes that used to pass as leftovers
    (folders of files without a `.json`, sub-folders of sub-folders) on purpose."""
    files = {
        ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----",
        ".ssh/authorized_keys": "ssh-ed25519 AAAA user@host",
        "Documents/thesis.tex": "\\documentclass{article}",
        ".config/myapp/settings.ini": "[main]\nx=1",
        "project/.git/HEAD": "ref: refs/heads/main",
        "project/.git/objects/ab/cdef": "blob",
        "project/main.py": "print('hi')",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    old = time.time() - 10 * clear.BUSY_S  # old enough to pass every "busy" guard
    for p in root.rglob("*"):
        os.utime(p, (old, old))
    return root


def tree(root: Path) -> dict[str, str]:
    """Every path under root with its content's hash: what must not change."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("made")
    subprocess.run([sys.executable, str(MAKE), str(out)], check=True, capture_output=True)
    return out / "cache"


@pytest.mark.parametrize("stale_only", [True, False])
def test_clear_refuses_a_folder_that_is_not_a_cache(tmp_path, stale_only):
    home = fake_home(tmp_path / "home")
    before = tree(home)
    flags = ["--stale-only"] if stale_only else []
    for args in (["cache", "--dir", str(home)], ["cache", "clear", "--dir", str(home), *flags]):
        r = cli(*args, *(["--yes"] if "clear" in args else []))
        assert r.returncode != 0 and "Traceback" not in r.stderr
        assert "error (environment)" in r.stderr and "not a Triton cache" in r.stderr
        assert "no Triton cache entry" in r.stderr and "--dir" in r.stderr
    assert tree(home) == before


def test_triton_cache_dir_set_to_home_is_refused(tmp_path):
    home = fake_home(tmp_path / "home")
    before = tree(home)
    env = {"HOME": str(home), "TRITON_CACHE_DIR": str(home)}
    r = cli("cache", "clear", "--stale-only", "--yes", env=env)
    assert r.returncode != 0 and "home folder" in r.stderr and "Traceback" not in r.stderr
    assert tree(home) == before


def test_the_file_system_root_is_refused_at_once():
    start = time.monotonic()
    r = cli("cache", "clear", "--dir", "/")
    assert r.returncode != 0 and "root of the file system" in r.stderr
    assert time.monotonic() - start < 30  # refused before anything under / is walked


def test_foreign_things_planted_in_a_real_cache_stay(made, tmp_path):
    """Only Triton's own leftovers go; each planted thing is named and kept, and a link out of
    the cache leads nowhere."""
    root = tmp_path / "cache"
    shutil.copytree(made, root)
    victim = fake_home(tmp_path / "victim")
    before_victim = tree(victim)
    entry = next(root.glob("*/scale_kernel.cubin")).parent
    planted = {
        entry / "notes.txt": "mine",  # a user file inside a live entry
        root / key("F") / "photo.jpg": "jpeg",  # a key-named folder of user files
        root / key("G") / "k.source": "module {}",  # Triton's partial entry...
        root / key("G") / "data" / "keep.csv": "1,2",  # ...but with a folder Triton never makes
        root / key("T") / "tmp.pid_999999999_ab" / "k.json": "{}",  # a dead write...
        root / key("T") / "tmp.pid_999999999_ab" / "diary.md": "dear",  # ...holding user text
        root / "README.md": "my cache notes",  # beside the entries
        root / "backup" / "k.cubin": "x",  # a folder not named as a key
        root / "workbench" / "not-a-digest" / "x.json": "{}",
    }
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / key("L")).mkdir()
    (root / key("L") / "k.json").symlink_to(victim / ".ssh" / "id_ed25519")
    (root / key("D")).symlink_to(victim, target_is_directory=True)
    junk = root / key("J") / "tmp.pid_999999999_cd"  # Triton's own leftovers: these go
    junk.mkdir(parents=True)
    (junk / "k.cubin").write_text("x")
    (root / key("E")).mkdir()
    old = time.time() - 10 * findings.TMP_GRACE_S
    for p in root.rglob("*"):
        os.utime(p, (old, old), follow_symlinks=False)

    r = cli("cache", "--dir", str(root), "--json")
    report = json.loads(r.stdout)
    foreign = [root / p for p in report["scan"]["foreign"]]
    named = {p for p in planted if any(f == p or f in p.parents for f in foreign)}
    assert set(planted) - named == {  # Triton's names, beside what is not Triton's
        root / key("T") / "tmp.pid_999999999_ab" / "k.json",
        root / key("G") / "k.source",
    }
    assert {root / key("L") / "k.json", root / key("D")} <= set(foreign)

    r = cli("cache", "clear", "--dir", str(root), "--stale-only", "--yes")
    assert r.returncode == 0, r.stderr
    assert "left alone" in r.stdout
    assert not junk.exists() and not (root / key("E")).exists()
    for path, text in planted.items():
        assert path.read_text() == text, path
    assert tree(victim) == before_victim
    assert (root / key("L") / "k.json").is_symlink()


def test_clear_checks_each_path_whatever_the_plan_says(made, tmp_path):
    """The executor proves each path is Triton's itself: a plan naming user files (a bug in a
    finding, a hand-written plan) removes none of them."""
    root = tmp_path / "cache"
    shutil.copytree(made, root)
    (root / key("U")).mkdir()
    (root / key("U") / "thesis.tex").write_text("x")
    (root / key("U") / "k.json").write_text("{}")
    (root / "mine").mkdir()
    (root / "mine" / "k.json").write_text("{}")
    rels = [key("U"), f"{key('U')}/thesis.tex", "mine", "mine/k.json"]
    later = time.time() + 2 * clear.BUSY_S
    for dry in (True, False):
        done = clear.execute(str(root), [clear.Removal(p, 0, "x") for p in rels], dry, now=later)
        assert done.removed == [] and [s["path"] for s in done.skipped] == rels
        assert all(s["why"].startswith("left alone") for s in done.skipped)
    assert (root / key("U") / "thesis.tex").exists() and (root / "mine" / "k.json").exists()
    ok = clear.execute(str(root), [clear.Removal(f"{key('U')}/k.json", 0, "x")], False, now=later)
    assert ok.removed == [f"{key('U')}/k.json"] and (root / key("U") / "thesis.tex").exists()


def test_an_empty_folder_is_an_empty_cache(tmp_path):
    found = scan.scan(str(tmp_path))
    assert (found.compiled, found.tuned, found.leftovers, found.foreign) == ([], [], [], [])


def test_the_layout_names_what_triton_writes(made):
    """The grammar against the names a real Triton wrote (make.py's cache): all of them pass,
    so a real cache is never taken for a foreign folder."""
    names = [p for p in made.rglob("*")]
    assert names and all(
        layout.is_entry(p) if p.is_dir() else layout.is_triton_file(p) for p in names
    )
    for name in ("id_ed25519", "thesis.tex", "settings.ini", "HEAD", "x.json.bak"):
        assert layout.FILE.match(name) is None
    with pytest.raises(WorkbenchError) as e:
        layout.check_root(Path.home())
    assert e.value.problem.kind == "not-a-cache"
