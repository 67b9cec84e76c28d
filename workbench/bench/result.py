"""The bench job's output, typed: one record per case (a row of bench.json) and the job's result.

Pure (no torch): the child builds records from raw timings, the parent reads them back with
`from_dict`; `to_dict` is the JSON the events, the store and bench.json carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from workbench.bench import metrics
from workbench.bench.clock_rules import Clocks
from workbench.runtime.records import Record, plain, result_dict


@dataclass(frozen=True)
class Ceilings:
    device: str
    torch: str
    triton: str
    copy_gbps: float
    matmul_tflops: dict[str, dict[str, float]]
    """dtype -> {matrix size: TFLOP/s}."""
    l2_bytes: int
    measured: str

    def matmul_rate(self, dtype: str | None) -> float:
        """The best measured matmul rate for this dtype (bfloat16's when it was not measured)."""
        by_size = self.matmul_tflops.get(dtype or "") or self.matmul_tflops["bfloat16"]
        return max(by_size.values())

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Ceilings:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


AS_GIVEN = "as given"
"""The dtype of a case whose inputs were not cast: a three-name module's get_inputs()."""
RECORD_FIELDS = (
    "name",
    "shape",
    "dtype",
    "status",
    "ms",
    "gbps",
    "tflops",
    "roofline_ratio",
    "speedup_vs_torch",
    "speedup_vs_compile",
    "device",
)
"""What every record of bench.json holds, at least."""
MEASURED_FIELDS = (
    "ms_p20",
    "ms_p80",
    "bytes",
    "flops",
    "bytes_source",
    "flops_source",
    "floor_ms",
    "bound",
    "torch_ms",
    "compile_ms",
    "compile_mode",
    "input_sets",
    "size_copy_ms",
    "vs_copy",
)
"""What a record holds once the case was timed."""


@dataclass
class BenchRecord(Record):
    name: str
    shape: list[int]
    dtype: str
    device: str | None
    status: str = "ok"
    """ok | failed (the check at this shape failed) | error."""
    ms: float | None = None
    gbps: float | None = None
    tflops: float | None = None
    roofline_ratio: float | None = None
    speedup_vs_torch: float | None = None
    speedup_vs_compile: float | str | None = None
    """A ratio, or "n/a: why" when torch.compile failed or was not asked for."""
    check: dict | None = None
    note: str | None = None
    ms_p20: float | None = None
    ms_p80: float | None = None
    bytes: float | None = None
    flops: float | None = None
    bytes_source: str | None = None
    """Where `bytes` comes from: metrics.SPEC, or INPUTS_OUTPUTS when the spec has no model."""
    flops_source: str | None = None
    """Where `flops` comes from: metrics.SPEC, or FLOP_COUNTER when the spec has no model."""
    input_dtype: str | None = None
    """The timed inputs' floating dtype, when the case ran them "as given"."""
    floor_ms: float | None = None
    bound: str | None = None
    torch_ms: float | None = None
    compile_ms: float | None = None
    compile_mode: str | None = None
    input_sets: int | None = None
    size_copy_ms: float | None = None
    """Median ms of a device-to-device copy of the case's bytes, timed as the kernel is."""
    vs_copy: float | None = None
    """size_copy_ms / ms: 1.0 moves the bytes as fast as a plain copy of the same size. Where
    that copy itself falls short of the copy ceiling (launch, ramp-up, tail at a small size),
    so does `roofline_ratio`, and this says how much of the gap is the kernel's. None in results
    stored before it was measured, and without a byte count."""
    reason: str | None = None
    problem: dict | None = None
    launch: dict | None = None
    """How one call launches, eager vs one CUDA graph (`bench.launches`), when asked for."""
    clocks: Clocks | None = None
    """The SM clock, power and clock-event reasons while the kernel was timed (`bench.clocks`);
    None without NVML, and in results stored before they were kept."""
    torch_clocks: Clocks | None = None
    """The same while the eager reference was timed."""

    @property
    def where(self) -> str:
        return f"{self.name} {self.dtype} {'x'.join(map(str, self.shape)) or '-'}"

    @property
    def compute_dtype(self) -> str | None:
        """The dtype whose measured matmul rate is this case's compute ceiling."""
        return self.input_dtype if self.dtype == AS_GIVEN else self.dtype

    def to_dict(self) -> dict:
        """RECORD_FIELDS always, MEASURED_FIELDS once timed, the rest where set."""
        out = {k: getattr(self, k) for k in RECORD_FIELDS}
        for f in fields(self):
            if f.name in RECORD_FIELDS:
                continue
            value = getattr(self, f.name)
            if value is not None or (f.name in MEASURED_FIELDS and self.ms is not None):
                out[f.name] = plain(value)
        return out

    @classmethod
    def parsed_fields(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        return {k: Clocks.from_dict(d[k]) if d.get(k) else None for k in ("clocks", "torch_clocks")}


@dataclass(frozen=True)
class Sample:
    """One case as the GPU gave it: the check at that shape and, when it passed, the timings."""

    check: dict
    """status, max_abs_diff, rel_l2 of the check at this shape."""
    timings: metrics.Timings | None = None
    reason: str = ""
    problem: dict | None = None
    note: str | None = None
    launch: dict | None = None
    clocks: Clocks | None = None
    torch_clocks: Clocks | None = None


def case_record(
    name: str,
    shape: tuple[int, ...] | list[int],
    dtype: str | None,
    ceil: Ceilings,
    sample: Sample,
    compile_mode: str,
) -> BenchRecord:
    """The record of one case: its figures where it was timed, else why it was not."""
    rec = BenchRecord(name, list(shape), dtype or AS_GIVEN, ceil.device, check=sample.check)
    status = sample.check.get("status")
    if sample.timings is None:
        rec.status = "failed" if status == "failed" else "error"
        rec.reason = f"correctness check {status}: {sample.reason}"
        rec.problem = sample.problem
        return rec
    rate = ceil.matmul_rate(dtype or sample.timings.input_dtype)
    figures = metrics.derived(sample.timings, ceil.copy_gbps, rate)
    # The timings go on the record under their own names; the compiled time only by its figures.
    timed = {k: v for k, v in asdict(sample.timings).items() if k != "compiled"}
    return replace(
        rec,
        **timed,
        **figures,
        note=sample.note,
        launch=sample.launch,
        compile_mode=compile_mode,
        clocks=sample.clocks,
        torch_clocks=sample.torch_clocks,
    )


@dataclass
class BenchResult:
    kernel: str
    device: str
    ceilings: Ceilings
    records: list[BenchRecord] = field(default_factory=list)
    mode: str = "gpu"

    @property
    def correct(self) -> bool:
        return bool(self.records) and all(r.status == "ok" for r in self.records)

    def summary(self) -> dict[str, int]:
        status = [r.status for r in self.records]
        return {
            "cases": len(status),
            "ok": status.count("ok"),
            "failed": status.count("failed"),
            "errors": status.count("error"),
        }

    def to_dict(self) -> dict:
        return result_dict(self, "ceilings", "records")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BenchResult:
        return cls(
            kernel=d["kernel"],
            device=d["device"],
            ceilings=Ceilings.from_dict(d["ceilings"]),
            records=[BenchRecord.from_dict(r) for r in d["records"]],
            mode=d.get("mode", "gpu"),
        )
