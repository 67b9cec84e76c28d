"""The check job's output, typed: one result per case and the report of the whole check.

Pure (no torch): the child fills them, the parent reads them back with `from_dict`; `to_dict` is
the JSON the events and the store carry. The summary is recomputed from the cases, so a report
stored before a fact existed reads back with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.check import access, verdict
from workbench.runtime.records import Record, result_dict


@dataclass
class CaseResult(Record):
    shape_set: str
    shape: list[int]
    dtype: str
    layout: str
    """"contiguous", or "strided" when the tensor inputs are non-contiguous views."""
    status: str = "passed"
    """passed | failed | skipped | error."""
    rule: str = ""
    """How the case was judged (`check.compare`): "calibrated" (against a wider run of the
    reference, within a factor of the reference's own error or a floor), "stated" (the spec's
    tolerance), "exact" (integer outputs); "" in results stored before rules were named."""
    against: str = ""
    """The yardstick: the dtype of the reference's wider run ("float64", "float32"), or ""
    for the reference's own run at the test dtype."""
    against_note: str = ""
    """Why a calibrated case had no wider run to be measured against."""
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    """The worst element's error relative to max(|value|, RMS of the output)."""
    rel_l2: float | None = None
    """The kernel's relative L2 error against the yardstick."""
    ref_rel_l2: float | None = None
    ref_max_rel: float | None = None
    """The reference's own errors at the test dtype against the wider run (calibrated)."""
    bound_rel_l2: float | None = None
    bound_max_rel: float | None = None
    """What the kernel's two errors were allowed."""
    worst_index: list[int] | None = None
    unwritten: int = 0
    """Output elements still holding the poison NaN of their fresh allocation (never written)
    where the reference has no NaN."""
    read_padding: int = 0
    """Output elements holding the NaN of a strided input copy's padding: an input read
    outside its view (strides ignored, or past its end)."""
    nonfinite: int = 0
    """Output elements NaN or Inf where the reference is finite, neither poison: made by the
    kernel (overflow, 0/0, log of a negative)."""
    bad: int = 0
    numel: int = 0
    boundary_only: bool = False
    boundary_block: int | None = None
    """The smallest power-of-two tile whose partial last tile holds every wrong element."""
    accesses: list[dict] = field(default_factory=list)
    """Accesses out of bounds or of uninitialised memory (`check.access`): from guard regions,
    the interpreter's bounds, or compute-sanitizer."""
    boundary_blocks: list[int] = field(default_factory=list)
    """Every such tile width (a few wrong elements fit many)."""
    launches: list[dict] = field(default_factory=list)
    """The first launch of each Triton kernel kernel_fn ran: kernel, grid and integer
    constexprs (`check.launches`)."""
    inputs: list[list[int]] = field(default_factory=list)
    """The shapes of its tensor inputs: what names a case whose inputs get_inputs() made."""
    deterministic: bool | None = None
    stochastic: dict | None = None
    """Set when the errors are another random stream's: keep_rate, ref_keep_rate, rate_bound,
    rate_ok, scale (kernel / reference on elements both kept), scale_ok (`check.stochastic`)."""
    reason: str = ""
    problem: dict | None = None
    seconds: float = 0.0


@dataclass
class CheckReport:
    kernel: str
    device: str
    mode: str
    cases: list[CaseResult] = field(default_factory=list)
    sanitizer: dict = field(default_factory=dict)
    """compute-sanitizer's run when the check ran under it (`profilers.sanitizer`): tool,
    command, log, errors, and its "accesses" (`check.access` records)."""
    notes: list[str] = field(default_factory=list)
    """How the check ran where that differs from what the module asks: an autotuner pinned to
    its first config in the interpreter."""

    @property
    def correct(self) -> bool:
        ran = [c for c in self.cases if c.status != "skipped"]
        found = self.sanitizer.get("accesses")
        return bool(ran) and all(c.status == "passed" for c in ran) and not found

    @property
    def given_correct(self) -> bool:
        """Right on the inputs the module gives (its spec's shapes, or get_inputs()),
        whatever the cases derived from them say."""
        given = [c for c in self.cases if c.status != "skipped" and not verdict.derived(c)]
        return bool(given) and all(c.status == "passed" for c in given)

    def summary(self) -> dict:
        """Counts by status, the report-level facts (`check.verdict`), the given and derived
        cases apart, and the verdict with its fix: the given inputs' when they are wrong (the
        first cause), else the whole check's."""
        by: dict = {
            s: sum(c.status == s for c in self.cases) for s in ("passed", "failed", "skipped")
        }
        by["errors"] = sum(c.status == "error" for c in self.cases)
        by.update(verdict.facts(self.cases))
        given = [c for c in self.cases if not verdict.derived(c)]
        derived = [c for c in self.cases if verdict.derived(c)]
        by["given"] = verdict.part(given)
        by["derived"] = verdict.part(derived, [c for c in given if c.status == "passed"])
        found = [r for c in self.cases for r in c.accesses] + list(
            self.sanitizer.get("accesses", [])
        )
        by["accesses"] = len(found)
        for key, part in (("given", given), ("derived", derived)):  # each part's own accesses
            said = access.verdict([r for c in part for r in c.accesses])
            if said and verdict.wrong(by[key]):
                by[key]["verdict"] = said
        # an access out of bounds names the cause itself; else the given inputs' cause first
        named = access.verdict(found)
        whole = named or verdict.verdict(self.cases, by)
        wrong_given = not named and verdict.wrong(by["given"])
        by["verdict"] = by["given"]["verdict"] if wrong_given else whole
        by["fix"] = access.FIXES.get(by["verdict"]) or verdict.FIXES.get(by["verdict"], "")
        by["tail"] = verdict.tail(self.cases)
        return by

    def to_dict(self) -> dict:
        optional = ("sanitizer",) * bool(self.sanitizer) + ("notes",) * bool(self.notes)
        return result_dict(self, "cases", *optional)

    @classmethod
    def from_dict(cls, d: dict) -> CheckReport:
        cases = [CaseResult.from_dict(c) for c in d["cases"]]
        extra = (d.get("sanitizer") or {}, d.get("notes") or [])
        return cls(d["kernel"], d["device"], d["mode"], cases, *extra)
