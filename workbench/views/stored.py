"""The newest stored result of each kind for a kernel, as a `Finished`: what a tab shows for a
kernel before (or without) a run in this session. Reads `reports/workbench.db` and run folders;
no UI imports."""

from __future__ import annotations

from workbench.catalog.discovery import KernelEntry
from workbench.run.kinds import for_tab, read_result
from workbench.run.store import RESULT_ERRORS, UNREADABLE, RunRecord, Store, unreadable_result
from workbench.runtime.errors import Problem
from workbench.views.finished import Finished, problem_of, result_problems, verdict_lines
from workbench.views.text import run_footer


def latest(tab: str, entry: KernelEntry, store: Store | None = None) -> Finished | None:
    """The newest stored result `tab` shows for `entry`, or None when the store has none. A
    newer run whose stored result cannot be read is named among its problems; when no run
    reads, the newest is shown as unreadable."""
    if tab == "profile":
        return _profile(entry)
    if tab == "history":
        return _history(entry, store or Store())
    command = for_tab(tab)
    if command is None or not command.shows:
        return None  # a cache report is read live, never from the store
    kind = command.shows[0]
    unread: list[Finished] = []
    for rec in (store or Store()).history(entry.name, kind, limit=5):
        if rec.result is None and rec.problem is None:
            continue
        done = from_record(tab, rec)
        if done.status != UNREADABLE:
            done.problems[:0] = [p for u in unread for p in u.problems]
            return done
        unread.append(done)
    return unread[0] if unread else None


def from_record(tab: str, rec: RunRecord) -> Finished:
    """`rec` as `tab` shows it; a record that does not read as its kind's result (a damaged
    row, a shape of another version) is shown as unreadable, with why."""
    kind = rec.kind
    said = UNREADABLE if rec.status == UNREADABLE else "error"
    problems = [(said, problem_of(rec.problem))] if rec.problem else []
    try:
        result = read_result(kind, rec.result)
        problems += result_problems(kind, result)
        lines = verdict_lines(kind, result)
    except RESULT_ERRORS as exc:
        unread = unreadable_result(rec, exc, f"run {kind} again")
        result, lines, problems = None, [], [*problems, (UNREADABLE, unread)]
    where = rec.artifacts or "-"
    if isinstance(rec.result, dict) and isinstance(rec.result.get("out_dir"), str):
        where = rec.result["out_dir"]
    return Finished(
        tab,
        rec.kernel,
        UNREADABLE if any(prefix == UNREADABLE for prefix, _ in problems) else rec.status,
        result=result,
        problems=problems,
        lines=lines + [run_footer(rec.id, rec.seconds or 0.0, where)],
        run_id=rec.id,
        started=rec.started,
        seconds=rec.seconds or 0.0,
        file=rec.file,
        stored=True,
    )


def _history(entry: KernelEntry, store: Store) -> Finished | None:
    """The kernel's newest runs of every kind and its bench times per case across runs, with
    the regressions beyond the noise: what `workbench history NAME` prints."""
    from workbench.views.history import kernel_history

    found = kernel_history(store, entry.name)
    if not found.runs:
        return None
    newest = found.runs[0]
    return Finished(
        "history",
        entry.name,
        "ok",
        result=found,
        lines=found.lines(),
        run_id=newest.id,
        started=newest.started,
        stored=True,
    )


def _profile(entry: KernelEntry) -> Finished | None:
    from workbench.diagnosis import diagnose_profile
    from workbench.profilers import saved

    try:
        found = saved.latest(entry.name)
        summary = diagnose_profile(found.summary) if found else None
    except RESULT_ERRORS as exc:  # a profile.json that is an ncu summary in name only
        unread = Problem(
            "corrupt-result",
            f"the newest stored ncu profile of {entry.name} cannot be read "
            f"({type(exc).__name__}: {exc})",
            "profile it again, or import its report again (`profile --import FILE`)",
            source="environment",
        )
        problems = [(UNREADABLE, unread)]
        return Finished("profile", entry.name, UNREADABLE, problems=problems, stored=True)
    if found is None:
        return None
    return Finished(
        "profile",
        entry.name,
        "ok",
        result=summary,
        lines=[found.describe()],
        run_id=found.run_id,
        started=found.started,
        stored=True,
    )
