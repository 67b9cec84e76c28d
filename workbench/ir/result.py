"""The ir job's output, typed: one variant per compiled config and the result of the whole job.

Pure (no triton): the parent reads a result back with `from_dict`, which takes exactly the keys
`to_dict` writes (a key missing or unknown is a TypeError), and the summary is recomputed from
the variants, so a result that disagrees with itself does not round-trip.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class IrVariant:
    label: str
    function: str
    derived: bool
    """True when the config came from --config, not from the kernel's own launches."""
    file: str
    def_line: int
    values: dict
    artifacts: dict[str, str]
    line_counts: dict[str, int]
    sourcemap: dict
    resources: dict | None
    device: dict | None
    """The driver's n_regs/n_spills beside the static figures (on the device only)."""
    cross_check: dict | None
    timings: dict[str, float]
    error: dict | None
    hash: str | None = None

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.hash is None:
            del out["hash"]
        return out

    @property
    def spill_bytes(self) -> int:
        return (self.resources or {}).get("spill_bytes", 0)


@dataclass
class IrResult:
    kernel: str
    mode: str
    """"gpu" (compiled by a launch on the device) or "cross-compile"."""
    arch: str
    triton_version: str
    out_dir: str
    stages: list[str]
    line_info: bool
    irregular_shapes: list[list[int]]
    variants: list[IrVariant] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "variants": len(self.variants),
            "errors": sum(v.error is not None for v in self.variants),
            "spilling": sum(v.spill_bytes > 0 for v in self.variants),
            "findings": len(self.findings),
            "arch": self.arch,
        }

    def to_dict(self) -> dict:
        out = asdict(self)
        out["variants"] = [v.to_dict() for v in self.variants]
        out["summary"] = self.summary()
        return out

    @classmethod
    def from_dict(cls, d: dict) -> IrResult:
        d = {k: v for k, v in d.items() if k != "summary"}
        d["variants"] = [IrVariant(**v) for v in d["variants"]]
        return cls(**d)
