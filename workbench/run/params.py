"""Each job kind's parameters, typed and frozen: what a command (or the TUI) builds from its
options, what crosses to the job's child as JSON (`to_dict`) and what the child reads back
(`read`), and what the store keeps beside the run. Pure: no torch, no triton."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from workbench.runtime.errors import fail
from workbench.runtime.records import Record

P = TypeVar("P", bound="Params")


class Params(Record):
    """A job's parameters: read back strictly, a key it does not know being a wrong shape."""

    @classmethod
    def read(cls: type[P], kind: str, data: Mapping[str, Any]) -> P:
        """`data` as `cls`, or a typed error naming the keys that do not fit."""
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        try:
            if unknown:
                raise TypeError(f"unknown key(s) {', '.join(unknown)}")
            return cls.from_dict(data)
        except TypeError as exc:
            raise fail(
                "bad-params",
                f"the {kind} job's parameters do not read as {cls.__name__}: {exc}",
                "build them with the kind's parameter builder (`workbench.app.params`); a "
                "workbench of another version may have started this job",
                source="tool",
            ) from exc


@dataclass(frozen=True)
class CheckParams(Params):
    dtypes: list[str] | None = None
    """None: every dtype the kernel declares."""
    shape_sets: list[str] | None = None
    """None: every set."""
    seed: int = 0
    guards: bool = True
    sanitize: str | None = None
    """Run the smallest cases under this compute-sanitizer tool (its wrapper is the caller's)."""
    smallest: bool = False


@dataclass(frozen=True)
class IrParams(Params):
    arch: int | None = None
    """None: the GPU's, else the default arch."""
    configs: list[str] = field(default_factory=list)
    """K=V,... selectors; none: every config."""
    stages: list[str] = field(default_factory=list)
    """The stages written; none: every stage."""
    dtype: str | None = None
    shape: list[int] | None = None
    out: str | None = None
    """The artifacts' folder; None: the run folder."""
    cross_check: bool = False
    """Also cross-compile a GPU launch and compare (`resources`)."""


@dataclass(frozen=True)
class BenchParams(Params):
    shapes: list[list[int]] | None = None
    dtypes: list[str] | None = None
    compile: bool = True
    """Time torch.compile of the reference beside it."""
    launches: bool = False
    """Also time one call eagerly and replayed from a CUDA graph."""
    refresh_ceilings: bool = False
    seed: int = 0


@dataclass(frozen=True)
class SweepParams(Params):
    strategy: str = "exhaustive"
    budget: dict | None = None
    """`sweep.strategy.Budget.to_dict()`; None: the strategy's default."""
    seed: int = 0
    shapes: list[list[int]] | None = None
    """None: the kernel's own sweep shapes."""
    dtype: str | None = None
    space: str = "own"
    """own, auto, neighbours, or a file's absolute path."""
    jobs: int | None = None
    """Parallel compiles; None: the CPU cores."""
    arch: int | None = None
    resume: str | None = None
    """The sweep.json to go on from."""
    config_timeout: float = 120.0
    triton_pick: bool = True
    time: bool = True
    """False keeps a GPU sweep static (resources only), as `diagnose` gathers them."""
    workers: list[str] | None = None
    """The sweep-worker runs of a sweep by several, as its stored run names them."""


@dataclass(frozen=True)
class ProfileParams(Params):
    """The profiled child's: the cases it runs inside its NVTX ranges."""

    configs: list[dict] = field(default_factory=list)
    """{shape, dtype} per case."""
    warmup: int = 2
    repeats: int = 1
    pin: dict = field(default_factory=dict)
    """One config's constexprs and options, forced for the run."""


@dataclass(frozen=True)
class CacheParams(Params):
    tuned: list[dict] = field(default_factory=list)
    """Autotune cache entries of the kernel: {path, dir, kernel, key, timings}."""
    arch: int | None = None
    verify: bool = False
    """Time the cached choices again (GPU)."""
