"""The key recipes against caches real Triton versions wrote (3.4, 3.6 kept as fixtures; the
installed one made fresh by cross-compiling and by Triton's own `check_disk_cache`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from workbench.cache import keys, live, scan

pytestmark = pytest.mark.versions  # CI runs these under every Triton release

VERSIONS = FIXTURES / "cache_versions"
MAKE = VERSIONS / "make.py"


@pytest.fixture(scope="session")
def fresh(tmp_path_factory) -> Path:
    """A cache made now by the installed Triton (the CI's version)."""
    out = tmp_path_factory.mktemp("fresh")
    subprocess.run([sys.executable, str(MAKE), str(out)], check=True, capture_output=True)
    return out


def made_by(folder: Path) -> tuple[dict, scan.CacheScan]:
    return json.loads((folder / "inputs.json").read_text()), scan.scan(str(folder / "cache"))


def check_recipes(inputs: dict, found: scan.CacheScan) -> None:
    c, a = inputs["compile"], inputs["autotune"]
    key = keys.compile_key(
        inputs["triton_key"],
        c["src_hash"],
        inputs["backend_hash"],
        c["options_hash"],
        inputs["env_vars"],
    )
    assert keys.sha256(key) == c["hash"]
    [compiled] = found.compiled
    assert compiled.dir == keys.dirname(c["hash"])
    assert compiled.triton_version == inputs["triton_version"]

    def tuned_key(configs: list[str]) -> str:
        return keys.autotune_key(
            inputs["triton_key"],
            inputs["backend_hash"],
            a["fn_cache_key"],
            inputs["env_vars"],
            keys.tuning_key_from_file(a["tuning_key"]),
            configs,
        )

    [tuned] = found.tuned
    assert tuned.dir == keys.dirname(keys.sha256(tuned_key(a["configs"])))
    assert tuned.key == a["tuning_key"] and tuned.kernel == "scale_kernel"
    # any change of a component leads elsewhere: the recipe is not trivially satisfied
    assert keys.dirname(keys.sha256(tuned_key(a["configs"][::-1]))) != tuned.dir


@pytest.mark.parametrize("version", ["3.4", "3.6", "3.9"])
def test_recipes_match_caches_each_triton_wrote(version):
    inputs, found = made_by(VERSIONS / f"triton_{version}")
    assert inputs["triton_version"].startswith(version)
    check_recipes(inputs, found)


def test_recipes_match_a_cache_the_installed_triton_writes_now(fresh):
    check_recipes(*made_by(fresh))


def test_live_keys_find_the_entries_the_installed_triton_wrote(fresh, tmp_path, monkeypatch):
    import triton

    monkeypatch.syspath_prepend(str(VERSIONS))
    import tiny_kernel

    from workbench.runtime import compat

    inputs, found = made_by(fresh)
    [tuned] = found.tuned
    tuner = tiny_kernel.scale_tuned
    expected = live.autotune_dir(tiny_kernel.scale_kernel, 90, tuple(tuned.key), tuner.configs)
    assert triton.__version__ == inputs["triton_version"]
    assert expected == tuned.dir
    assert (
        live.autotune_dir(tiny_kernel.scale_kernel, 80, tuple(tuned.key), tuner.configs)
        != tuned.dir
    )

    import torch

    cache = tmp_path / "cache"
    shutil.copytree(fresh / "cache", cache)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    x = torch.empty(4096)
    launch = (tiny_kernel.scale_kernel, (x, x, 4096), {"BLOCK": 128, "num_warps": 2})
    kernel = compat.cross_compile(launch[0], 90, launch[1], launch[2])
    bound = compat.bind_launch(launch[0], compat.gpu_target(90), launch[1], launch[2])
    predicted = live.compile_dir(tiny_kernel.scale_kernel, bound, 90)
    assert predicted == keys.dirname(kernel.hash)
    assert predicted in {c.dir for c in scan.scan(str(cache)).compiled}
    assert predicted not in {c.dir for c in found.compiled}  # another launch, another entry


def test_tuning_key_as_the_autotuner_builds_it():
    class T:
        dtype = "torch.float16"

    named = {"a": T(), "M": 64, "N": 32, "b": T()}
    assert keys.tuning_key(named, ["M", "N", "nope"]) == (64, 32, "torch.float16", "torch.float16")


def test_meta_inputs_give_the_keys_real_inputs_give(monkeypatch):
    """The cache job computes keys from meta tensors (no memory): the same compile dir as real
    tensors for aligned, offset (unaligned) and ==1 / divisible-by-16 size arguments."""
    import torch

    monkeypatch.syspath_prepend(str(VERSIONS))
    import tiny_kernel

    from workbench.runtime import compat

    target = compat.gpu_target(90)
    for n, offset in ((4096, 0), (4096, 1), (1, 0), (1000, 3)):
        dirs = set()
        for device in ("cpu", "meta"):
            x = torch.empty(n + offset, device=device)[offset:]
            args = (x, torch.empty(n, device=device), n)
            bound = compat.bind_launch(tiny_kernel.scale_kernel, target, args, {"BLOCK": 128})
            dirs.add(live.compile_dir(tiny_kernel.scale_kernel, bound, 90))
        assert len(dirs) == 1, (n, offset)
