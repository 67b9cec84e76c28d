"""The kernel list's rows: each kernel's standing from the store (last check verdict, last
roofline fraction, findings above info, a stale cache, a source edited since its newest run),
the `/` filter and the sort by column. Pure but for reading the store; no UI imports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.catalog.discovery import KernelEntry
from workbench.catalog.freshness import changed_since
from workbench.run.kinds import read_result
from workbench.views.text import escape_controls

if TYPE_CHECKING:  # the list paints before the store is read: its module loads with the reading
    from workbench.run.store import RunRecord, Store

LIST_HEADERS = ("name", "check", "roof", "find", "cache", "src")
"""name; last check (ok, FAIL, or how it ended); best roofline fraction of the last bench;
findings above info (newest diagnose or compile); stale autotune entries (last cache run); the
source edited since the newest run."""


@dataclass(frozen=True)
class KernelStatus:
    check: str | None = None
    """"ok", "FAIL", or the status of a check that did not finish (error, timeout, ...)."""
    roofline: float | None = None
    findings: int | None = None
    stale_cache: bool | None = None
    newest: float | None = None
    """When the newest run of this kernel began (epoch seconds)."""


NO_STATUS = KernelStatus()


def status_of(name: str, store: Store) -> KernelStatus:
    """One kernel's standing from its newest runs of each kind, each read back as its typed
    result; a record that does not read back (damaged, or of another version's shape) shows its
    check as "unreadable" and its other columns as unknown ("-")."""
    from workbench.run.store import RESULT_ERRORS, UNREADABLE

    check = _newest(store, name, "check", skip_cancelled=True)
    bench = _newest(store, name, "bench")
    compiled = _newest(store, name, "ir")
    diagnosed = _newest(store, name, "diagnose")
    cache = _newest(store, name, "cache")
    runs = [r for r in (check, bench, compiled, diagnosed, cache) if r is not None]

    def read(fn: Callable[..., Any], *args: Any, unread: Any = None) -> Any:
        try:
            return fn(*args)
        except RESULT_ERRORS:
            return unread

    return KernelStatus(
        check=read(_check_word, check, unread=UNREADABLE) if check else None,
        roofline=read(_roofline, bench) if bench else None,
        findings=read(_findings, compiled, diagnosed),
        stale_cache=read(_stale, cache.summary) if cache else None,
        newest=max((r.started for r in runs), default=None),
    )


def statuses(names: Sequence[str], store: Store | None = None) -> dict[str, KernelStatus]:
    from workbench.run.store import Store

    store = store or Store()
    known = set(store.kernels())
    return {n: status_of(n, store) if n in known else NO_STATUS for n in names}


def _newest(store: Store, name: str, kind: str, skip_cancelled: bool = False) -> RunRecord | None:
    """The newest run of a kind; `skip_cancelled`: the newest that ran to an end, a cancelled
    one only when none did (a check cancelled midway says nothing of the earlier FAIL)."""
    found = store.history(name, kind, limit=10 if skip_cancelled else 1)
    ended = [r for r in found if r.status != "cancelled"] if skip_cancelled else []
    return (ended or found or [None])[0]


def _check_word(run: RunRecord) -> str:
    if run.result is None:  # a check that did not finish (or a damaged row): how it ended
        return run.status
    return "ok" if read_result("check", run.result).correct else "FAIL"


def _roofline(run: RunRecord) -> float | None:
    result = read_result("bench", run.result)
    ratios = [
        float(r.roofline_ratio)
        for r in (result.records if result else [])
        if r.status == "ok" and r.roofline_ratio is not None
    ]
    return max(ratios, default=None)


def _findings(compiled: RunRecord | None, diagnosed: RunRecord | None) -> int | None:
    """From the newest diagnose, which holds the compile's static findings and the rest; the
    newest compile's only without one (a later `ir` run showed 0 beside a high finding)."""
    if diagnosed:
        above = (diagnosed.summary or {}).get("above_info")
        if above is not None:
            return int(above)
    ir = read_result("ir", compiled.result) if compiled else None
    if ir is None:
        return None
    return sum(f.get("severity") != "info" for f in ir.findings)


def _stale(summary: dict | None) -> bool | None:
    return None if summary is None else bool(summary.get("dead"))


def source_changed(entry: KernelEntry, status: KernelStatus) -> bool:
    """The kernel's file changed after its newest run began: its results describe older code."""
    return status.newest is not None and changed_since(entry.file, status.newest)


def row(entry: KernelEntry, status: KernelStatus) -> tuple[str, ...]:
    return (
        escape_controls(entry.name),
        status.check or "-",
        f"{status.roofline:.0%}" if status.roofline is not None else "-",
        str(status.findings) if status.findings is not None else "-",
        {None: "-", True: "stale", False: "ok"}[status.stale_cache],
        "edited" if source_changed(entry, status) else "",
    )


def matches(entry: KernelEntry, text: str) -> bool:
    """The `/` filter: every word of `text` in the kernel's name or file (case-insensitive)."""
    hay = f"{entry.name} {entry.file}".lower()
    return all(word in hay for word in text.lower().split())


CHECK_ORDER = {"FAIL": 0, "error": 1, "crash": 1, "timeout": 1, "cancelled": 2, "ok": 3}


def sort_key(column: str, entry: KernelEntry, status: KernelStatus) -> tuple:
    """Sorting by a column: worst first for check, highest first for findings and stale cache,
    lowest roofline first (the kernels with most to gain); kernels without a value go last."""
    value: object
    if column == "check":
        value = CHECK_ORDER.get(status.check or "", 1) if status.check else None
    elif column == "roof":
        value = status.roofline
    elif column == "find":
        value = -status.findings if status.findings is not None else None
    elif column == "cache":
        value = None if status.stale_cache is None else not status.stale_cache
    elif column == "src":
        value = not source_changed(entry, status)
    else:
        value = entry.name
    return (value is None, value if value is not None else 0, entry.name)


def ordered(
    entries: Sequence[KernelEntry],
    status: dict[str, KernelStatus],
    text: str = "",
    column: str | None = None,
    reverse: bool = False,
) -> list[KernelEntry]:
    """The entries the list shows: filtered by `text`, sorted by `column` (discovery order when
    None); `reverse` flips the order of the kernels that have a value."""
    shown = [e for e in entries if matches(e, text)] if text else list(entries)
    if column is None:
        return shown
    keyed = sorted(shown, key=lambda e: sort_key(column, e, status.get(e.name, NO_STATUS)))
    if reverse:
        have = [e for e in keyed if not sort_key(column, e, status.get(e.name, NO_STATUS))[0]]
        keyed = have[::-1] + keyed[len(have) :]
    return keyed
