"""Find ncu and nsys: an override variable, PATH, CUDA_HOME, then NVIDIA's install folders.

Images often ship ncu without putting nsys on PATH; a copy of nsys lives inside the Nsight Compute
folder (`host/target-linux-x64/nsys`), so that folder is searched for both.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from workbench.runtime.errors import fail

OPT_ROOT = Path("/opt/nvidia")
ENV = {"ncu": "WORKBENCH_NCU", "nsys": "WORKBENCH_NSYS"}
PRODUCT = {"ncu": "Nsight Compute", "nsys": "Nsight Systems"}
GET_IT = {
    "ncu": "install Nsight Compute (the CUDA toolkit's nsight-compute package, or "
    "https://developer.nvidia.com/nsight-compute)",
    "nsys": "install Nsight Systems (the CUDA toolkit's nsight-systems package, or "
    "https://developer.nvidia.com/nsight-systems); an Nsight Compute install also carries "
    "one under host/target-linux-x64/",
}


@dataclass(frozen=True)
class Tool:
    name: str
    path: str
    version: str
    origin: str
    """Where it was found: the override variable, PATH, CUDA_HOME or an install folder."""

    def to_dict(self) -> dict:
        return asdict(self)


def _version_key(folder: Path) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", folder.name))


def _install_dirs(pattern_root: Path) -> list[Path]:
    """Versioned folders such as /opt/nvidia/nsight-compute/2025.3.1, newest first."""
    if not pattern_root.is_dir():
        return []
    return sorted((p for p in pattern_root.iterdir() if p.is_dir()), key=_version_key, reverse=True)


def candidates(
    name: str, env: Mapping[str, str] | None = None, opt_root: Path = OPT_ROOT
) -> list[tuple[str, str]]:
    """(path, origin) pairs to try, best first. The override is not here: see `find`."""
    env = os.environ if env is None else env
    found: list[tuple[str, str]] = []
    on_path = shutil.which(name, path=env.get("PATH", os.defpath))
    if on_path:
        found.append((on_path, "PATH"))
    cuda_home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if cuda_home:
        found.append((str(Path(cuda_home) / "bin" / name), "CUDA_HOME"))
    for folder in _install_dirs(opt_root / "nsight-compute"):
        inner = folder / name if name == "ncu" else folder / "host" / "target-linux-x64" / name
        found.append((str(inner), str(folder)))
    if name == "nsys":
        for folder in _install_dirs(opt_root / "nsight-systems"):
            found.append((str(folder / "bin" / "nsys"), str(folder)))
    return found


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find(name: str, env: Mapping[str, str] | None = None, opt_root: Path = OPT_ROOT) -> Tool:
    """The tool to use, or a `tool-missing` error naming what was searched and how to get it."""
    env = os.environ if env is None else env
    override = env.get(ENV[name])
    if override:
        if not _runnable(override):
            raise fail(
                "tool-missing",
                f"{ENV[name]}={override} is not an executable file",
                f"point {ENV[name]} at the {name} program, or unset it to search PATH",
            )
        return Tool(name, override, version(override), ENV[name])
    tried = candidates(name, env, opt_root)
    for path, origin in tried:
        if _runnable(path):
            return Tool(name, path, version(path), origin)
    searched = ", ".join(p for p, _ in tried) or "nothing"
    raise fail(
        "tool-missing",
        f"{name} ({PRODUCT[name]}) was not found on PATH, under CUDA_HOME/bin or in "
        f"{opt_root}/nsight-*/ (tried: {searched})",
        f"{GET_IT[name]}; or set {ENV[name]}=/path/to/{name}",
    )


@cache
def version(path: str) -> str:
    """The version line the tool prints, e.g. "2025.3.1.0 (build 36398880)"."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return parse_version(out)


def parse_version(text: str) -> str:
    """`ncu --version` ends with "Version 2025.3.1.0 (build …)"; nsys says "… version 2025…"."""
    for line in reversed(text.strip().splitlines()):
        m = re.search(r"[Vv]ersion\s+(\S.*)$", line.strip())
        if m:
            return m.group(1).strip()
    return text.strip().splitlines()[-1] if text.strip() else "unknown"
