"""The cache job's output, typed (pure: no triton): the keys a kernel's inputs are served, where
each of its autotune files would be looked up, and on a GPU its re-timed tunings.

`to_dict` is what the job's events and the cache report carry; `from_dict` takes exactly those
keys (a missing or unknown one is a TypeError) and recomputes the summary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class CacheReach:
    kernel: str
    triton_version: str
    arch: int
    mode: str
    """The device the keys were recomputed on: "cuda" or "cpu"."""
    functions: list[dict]
    """Each Triton function of the kernel: name, autotuned, and an Autotuner's key and configs."""
    compile_dirs: list[str]
    """The compile-cache directories the kernel's inputs are served from."""
    autotune: list[dict]
    """Each autotune file of the kernel's functions: its path, expected_dir and reachable."""
    keys: list[dict]
    """Each tuning key the inputs make: the function, the key and the inputs that share it."""
    input_errors: list[str]
    verify: list[dict] = field(default_factory=list)
    """Per key re-timed on a GPU (`cache verify`): served vs fastest, inputs tuned too narrowly."""

    def summary(self) -> dict[str, int]:
        dead = sum(not a.get("reachable") for a in self.autotune)
        found = {"compile_dirs": len(self.compile_dirs), "autotune": len(self.autotune)}
        return {**found, "dead": dead}

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary()}

    @classmethod
    def from_dict(cls, d: dict) -> CacheReach:
        return cls(**{k: v for k, v in d.items() if k != "summary"})
