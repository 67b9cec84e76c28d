"""The sweep's work queue (pure: no torch, no triton, no processes).

Workers (one per GPU, or one on a host without a GPU) ask for work as their compile pools free
up; the queue hands out the next (shape, config) items, takes each row back, and puts what a dead
worker held back at the front for another. Whoever runs the workers (`spread` for processes on
this host, `cluster` for Ray actors, the "sweep" job for its own loop) passes each worker's events
to `on_event` and its end to `ended`, and delivers the messages they return.

Blame: a config whose worker's watchdog ended it is a timeout row at once. A worker that died
without a word strikes the config it was running (every config it held, when none was running);
one that ended on an error strikes only the running one, since it said what failed. A config
struck TRIES times is a crash row; the others go back on the queue unstruck.

Triton's own pick for a shape is one more item, handed out (first in line) once every config of
that shape has its row, so that it finds their compiles in the cache. A search strategy other than
exhaustive makes each shape one item: a worker compiles its configs and times those the strategy
asks for, sending each row as it is decided (again as later rounds time it); taken up again after
a death, the search gets the rows already in. Rows come out in the plan's order whatever order
they finished in: one worker and several give the same result.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from workbench.runtime.errors import Problem, fail
from workbench.runtime.grammar import shape_text
from workbench.sweep import analysis
from workbench.sweep.result import SweepResult
from workbench.sweep.row import SweepRow

TRIES = 2
"""Worker deaths a config may be blamed for before it is recorded as crashing."""
END = {"end": True}
"""The message that ends a worker: nothing is left to do (or the sweep failed)."""
Message = tuple[str, dict]
"""(worker, message to it)."""
HEAD = ("kernel", "mode", "arch", "gpu", "triton_version", "dtype", "space", "device")
"""The result's fields every worker's `ready` event names alike (besides its gpu_index, host
and jobs)."""


@dataclass
class Item:
    id: int
    shape: list
    label: str
    row: SweepRow | None
    """The config's blank row (None: Triton's own pick, or a search, for the shape)."""
    kind: str = "config"
    """config | triton (Triton's own pick) | search (a strategy's search of the shape)."""
    search: int | None = None
    """A config's search item, when a strategy times the shape."""
    strikes: int = 0
    text: str = field(init=False)
    """The shape as text: what workers are matched to."""

    def __post_init__(self) -> None:
        self.text = shape_text(self.shape)


@dataclass
class Worker:
    head: dict | None = None
    """What its `ready` event said: the result's header on that worker (GPU model, arch...)."""
    held: set[int] = field(default_factory=set)
    asking: int = 0
    running: int | None = None
    shape: str | None = None
    """The shape of the last item handed to it: what it has captured and made inputs for."""
    timed_out: int | None = None
    ready_at: float | None = None
    done: int = 0
    lost: list[str] = field(default_factory=list)
    end: dict = field(default_factory=dict)
    """How it ended: status, timings (its result), problem."""


class WorkQueue:
    def __init__(self, config_timeout: float) -> None:
        self.lock = threading.Lock()
        self.config_timeout = config_timeout
        self.items: list[Item] = []
        self.pending: deque[int] = deque()
        self.rows: dict[int, SweepRow] = {}
        self.picks: dict[int, dict] = {}
        """Triton's pick or a search's trace, by its item."""
        self.problems: dict[str, dict] = {}
        self.loose_picks: dict[str, dict] = {}
        """Triton's picks that no item asked for (coordinate descent starts from one even with
        --no-triton-pick), by shape."""
        self.best: dict[str, float] = {}
        """Each shape's fastest time so far: a worker stops timing a clear loser sooner."""
        self.configs = 0
        self.strategy: dict | None = None
        self.shapes: dict[str, list[int]] = {}
        """Shape -> its config items' ids, in plan order."""
        self.triton_items: dict[str, int] = {}
        self.workers: dict[str, Worker] = {}
        self.planner: str | None = None
        self.planned = False
        self.notes: list[str] = []
        self.failed: Problem | None = None
        self.started = time.monotonic()
        self.first_ready: float | None = None
        self.first_handed: float | None = None
        self.finished_at: float | None = None

    # -- events ---------------------------------------------------------------------------------

    def on_event(self, worker: str, event: dict) -> list[Message]:
        """Take one event of `worker`; the messages to send in answer (to it or to others)."""
        kind = event.get("event")
        with self.lock:
            w = self.workers.setdefault(worker, Worker())
            if kind == "ready":
                self._ready(worker, w, event["head"])
            elif kind == "want":
                w.asking = max(1, int(event.get("n") or 1))
            elif kind == "plan":
                self._plan(event)
            elif kind == "problem":  # a shape's FLOPs, counted after its plan (or a note why not)
                if event.get("problem"):
                    self.problems[shape_text(event["shape"])] = event["problem"]
                self.notes += [n for n in event.get("notes", []) if n not in self.notes]
            elif kind == "running":
                w.running = event.get("id")
            elif kind == "config-timeout":
                w.timed_out = event.get("id")
            elif kind == "triton":  # its item's, or the one a coordinate search starts from
                pick = self.triton_items.get(event["shape"])
                if pick is not None:
                    self._done(worker, w, {**event, "id": pick})
                else:
                    self.loose_picks[event["shape"]] = event
            elif kind in ("config", "searched"):
                self._done(worker, w, event)
            elif kind == "result":
                w.end["timings"] = (event.get("result") or {}).get("timings", {})
            return self._serve()

    def ended(self, worker: str, status: str, problem: Problem | None = None) -> list[Message]:
        """`worker` is gone (`status` as jobs.Outcome says it): what it held goes back on the
        queue or, to blame, on the record. An error before it was ready, or while it planned,
        ends the sweep: every worker would meet it."""
        with self.lock:
            w = self.workers.setdefault(worker, Worker())
            w.end.update(status=status, problem=problem.to_dict() if problem else None)
            held = sorted(i for i in w.held if not self._is_done(i))
            w.held.clear()
            w.asking = 0
            if status == "error" and (w.head is None or self.planner == worker) and problem:
                self.failed = self.failed or problem
            if self.planner == worker:
                self.planner = None
            if status != "ok" and status != "cancelled":
                suspects = self._suspects(w, held, silent=status != "error")
                held = [i for i in held if not self._blame(self.items[i], w, i in suspects)]
                w.lost += [self.items[i].label for i in held]
            # back at the front, in their order (a search's configs go back with their search)
            self.pending.extendleft(reversed([i for i in held if self.items[i].search is None]))
            w.running = w.timed_out = None
            return self._serve()

    # -- state ----------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.failed is not None or (
            self.planned and all(self._is_done(i.id) for i in self.items)
        )

    def needs_worker(self) -> bool:
        """Whether a worker should start in place of one that ended: there is work nobody
        holds, or nobody is left to take it (a worker still starting counts as one)."""
        with self.lock:
            alive = any("status" not in w.end for w in self.workers.values())
            return not self.finished and (bool(self.pending) or not alive)

    def result(self) -> SweepResult | None:
        """The sweep so far, explained; None before any worker was ready."""
        record = self.record()
        return analysis.summarize(record) if record else None

    def record(self) -> SweepResult | None:
        """The sweep so far as sweep.json keeps it, rows in plan order (unexplained: cheap to
        write as each row lands); None before any worker was ready."""
        with self.lock:
            heads = [w.head for w in self.workers.values() if w.head]
            if not heads:
                return None
            order = [i for ids in self.shapes.values() for i in ids]
            rows = [self.rows[i].copy() for i in order if i in self.rows]
            picks = {e["shape"]: e for e in self.loose_picks.values()} | {
                shape_text(self.items[i].shape): p
                for i, p in self.picks.items()
                if self.items[i].kind == "triton"
            }
            triton = {text: p["pick"] for text, p in picks.items()}
            persisted = {text: p.get("persisted", []) for text, p in picks.items()}
            ran = {k: w for k, w in self.workers.items() if w.head or w.done or w.end}
            return SweepResult(
                **{k: heads[0][k] for k in HEAD},
                gpu_index=",".join(dict.fromkeys(h["gpu_index"] or "" for h in heads)) or None,
                jobs=sum({(h.get("host"), h["gpu_index"]): h["jobs"] for h in heads}.values()),
                shard=None,
                rows=rows,
                triton=triton,
                persisted=persisted,
                timings=self._timings(ran),
                complete=self.finished and self.failed is None,
                notes=list(self.notes),
                problems=dict(self.problems),
                strategy=self.strategy,
                shards=[self._shard(k, w) for k, w in ran.items()] if len(ran) > 1 else None,
            )

    def progress(self) -> dict:
        with self.lock:
            return {"event": "progress", "done": len(self.rows), "total": self.configs}

    # -- inside the lock ------------------------------------------------------------------------

    def _ready(self, worker: str, w: Worker, head: dict) -> None:
        w.head, w.ready_at = head, time.monotonic()
        self.first_ready = self.first_ready or w.ready_at
        models = {x.head["gpu"] or "?" for x in self.workers.values() if x.head}
        if len(models) > 1 and self.failed is None:
            self.failed = fail(
                "mixed-gpus",
                f"the workers run on different GPU models ({', '.join(sorted(models))}): their "
                "timings do not compare",
                "pass --gpus with devices of one model (nvidia-smi -L lists them)",
                source="usage",
            ).problem

    def _plan(self, event: dict) -> None:
        shape = event["shape"]
        text = shape_text(shape)
        if text not in self.shapes:  # a second planner (the first died) plans it alike
            search = self._add(shape, "a search", None, "search") if event.get("search") else None
            ids = []
            for config in event["configs"]:
                item = self._add(shape, config["row"]["label"], config["row"], "config")
                self.configs += 1
                item.search = search.id if search and config["todo"] else None
                ids.append(item.id)
                if not config["todo"]:
                    self.rows[item.id] = config["row"]
                elif search is None:
                    self.pending.append(item.id)
            self.shapes[text] = ids
            if search is not None:
                self.pending.append(search.id)
            if event.get("problem"):
                self.problems[text] = event["problem"]
            if event.get("triton"):
                self.triton_items[text] = self._add(shape, "Triton's own pick", None, "triton").id
                self._release_pick(text)
            self.notes += [n for n in event.get("notes", []) if n not in self.notes]
        if event.get("last"):
            self.planned = True
            self.planner = None

    def _add(self, shape: list, label: str, row: SweepRow | None, kind: str) -> Item:
        item = Item(len(self.items), shape, label, row, kind)
        self.items.append(item)
        return item

    def _done(self, worker: str, w: Worker, event: dict[str, Any]) -> None:
        i = event["id"]
        if not 0 <= i < len(self.items):  # a row a search timed beyond this queue's configs
            return
        w.held.discard(i)
        if w.running == i:
            w.running = None
        item = self.items[i]
        if self._is_done(i) and (item.kind != "config" or self.rows[i].get("worker") != worker):
            return  # it ran again after a worker was thought lost: the first row stands
        if item.kind == "triton":
            self.picks[i] = {"pick": event["pick"], "persisted": event.get("persisted", [])}
        elif item.kind == "search":
            self.picks[i] = {"trace": event["trace"]}
            self.strategy = self.strategy or {**event["strategy"], "shapes": {}}
            self.strategy["shapes"][shape_text(item.shape)] = event["trace"]
            w.held -= {c for c in w.held if self.items[c].search == i}
        else:
            sent: SweepRow = event["row"]  # a row as the worker's event carried it
            row: SweepRow = {**sent, "worker": worker}
            self.rows[i] = row
            ms = row["ms"]
            if row["status"] == analysis.TIMED and ms and row.get("stop") != "light":
                text = shape_text(item.shape)
                self.best[text] = min(self.best.get(text) or ms, ms)
            self._release_pick(shape_text(item.shape))
        w.done += 1
        if self.finished and self.finished_at is None:
            self.finished_at = time.monotonic()

    def _release_pick(self, text: str) -> None:
        """Triton's pick for `text` joins the front of the queue once every config has a row."""
        pick = self.triton_items.get(text)
        if pick is None or pick in self.pending or self._is_done(pick):
            return
        if all(self._is_done(i) for i in self.shapes[text]) and not any(
            pick in w.held for w in self.workers.values()
        ):
            self.pending.appendleft(pick)

    def _suspects(self, w: Worker, held: list[int], silent: bool) -> set[int]:
        if w.timed_out in held:
            return {w.timed_out}
        if w.running in held:
            return {w.running}
        return set(held) if silent else set()

    def _blame(self, item: Item, w: Worker, suspect: bool) -> bool:
        """Record `item` as what ended its worker, if it is to blame; False: it goes back."""
        if not suspect:
            return False
        if item.id == w.timed_out:
            problem = Problem(
                "config-timeout",
                f"ran past its {self.config_timeout:g} s (--config-timeout): its worker was ended",
                "profile it alone (profile --pin), or drop it from the space",
            )
            return self._record(item, "timeout", problem)
        item.strikes += 1
        if item.strikes < TRIES:
            return False
        problem = Problem(
            "config-crash",
            f"its worker process died each of the {item.strikes} times it ran "
            "(a crash, or a kill from outside)",
            "profile it alone (profile --pin) to see the fault, or drop it from the space",
        )
        return self._record(item, "failed", problem)

    def _record(self, item: Item, status: str, problem: Problem) -> bool:
        if item.kind == "triton":  # Triton's own pick: say why it is missing
            self.picks[item.id] = {"pick": {"label": None, "problem": problem.to_dict()}}
            self.picks[item.id]["persisted"] = []
        elif item.kind == "search":  # what it had not decided fails with it
            self.picks[item.id] = {"trace": {"problem": problem.to_dict()}}
            for config in self.items:
                if config.search == item.id and not self._is_done(config.id):
                    self._record(config, status, problem)
        else:
            assert item.row is not None  # a config's item carries its planned row
            self.rows[item.id] = {**item.row, "status": status, "problem": problem.to_dict()}
            self._release_pick(shape_text(item.shape))
        return True

    def _is_done(self, i: int) -> bool:
        return i in self.rows or i in self.picks

    def _serve(self) -> list[Message]:
        out: list[Message] = []
        for name, w in self.workers.items():
            if not w.asking or w.head is None:
                continue
            if self.finished:
                out.append((name, END))
                w.asking = 0
            elif not self.planned and self.planner is None:
                self.planner = name
                out.append((name, {"plan": True}))
                w.asking = 0
            elif self.pending:
                handed = [self._hand(name, w) for _ in range(min(w.asking, len(self.pending)))]
                out.append((name, {"items": handed, "best": dict(self.best)}))
                w.asking = 0
                self.first_handed = self.first_handed or time.monotonic()
        return out

    def _hand(self, name: str, w: Worker) -> dict:
        item = self.items[self._next(name, w)]
        w.held.add(item.id)
        w.shape = item.text
        if item.kind == "triton":
            return {"id": item.id, "shape": item.shape, "triton": True}
        if item.kind == "search":
            configs = [c for c in self.items if c.search == item.id]
            w.held |= {c.id for c in configs if not self._is_done(c.id)}
            search = [{"id": c.id, "values": c.row["values"], "row": self.rows.get(c.id)}
                      for c in configs if c.row]  # fmt: skip
            return {"id": item.id, "shape": item.shape, "search": search}
        assert item.row is not None  # a config's item carries its planned row
        return {"id": item.id, "shape": item.shape, "values": item.row["values"]}

    def _next(self, name: str, w: Worker) -> int:
        """The pending item `w` should take next: Triton's pick when one is due (first in line),
        else the first of the shape it works on, else the first of a shape no other worker is on,
        else the first. Each worker captures a shape's launch and makes its inputs once, so
        spreading shapes over workers spares the others that work (one worker per shape while
        there are shapes enough)."""
        if self.items[self.pending[0]].kind == "triton":
            return self.pending.popleft()
        others = {o.shape for n, o in self.workers.items() if n != name and o.held}
        chosen = fresh = None
        for at, i in enumerate(self.pending):
            text = self.items[i].text
            if text == w.shape:
                chosen = at
                break
            if fresh is None and text not in others:
                fresh = at
        at = chosen if chosen is not None else fresh if fresh is not None else 0
        i = self.pending[at]
        del self.pending[at]
        return i

    def _timings(self, ran: dict[str, Worker]) -> dict[str, float]:
        """Each worker phase as long as its slowest worker (they run side by side); start_s
        until the first worker was ready; sweep_s the queue's wall time, from the first item
        handed out to the last row in; total_s all of it."""
        phases = [w.end.get("timings") or {} for w in ran.values()]
        out = {k: max(p.get(k, 0.0) for p in phases) for k in set().union(*phases)}
        out.pop("total_s", None)
        end = self.finished_at or time.monotonic()
        if self.first_ready is not None:
            out["start_s"] = round(self.first_ready - self.started, 3)
        if self.first_handed is not None:
            out["sweep_s"] = round(end - self.first_handed, 3)
        out["total_s"] = round(end - self.started, 3)
        return out

    def _shard(self, name: str, w: Worker) -> dict[str, Any]:
        head = w.head or {}
        return {
            "worker": name,
            "gpu_index": head.get("gpu_index"),
            "host": head.get("host"),
            "rows": w.done,
            "ready_s": None if w.ready_at is None else round(w.ready_at - self.started, 3),
            "timings": w.end.get("timings", {}),
            "status": w.end.get("status", "running"),
            "lost": w.lost,
        }
