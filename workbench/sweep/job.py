"""The sweep's worker (child process, or a Ray actor): compile configs ahead in a process pool,
and on a GPU check each against the reference and time it on the same inputs; Triton's own pick
beside them.

One loop (`Sweep.work`) serves both ways to run it. The "sweep-worker" job is one worker of a
queue its runner holds (`spread`, `cluster`): it asks for items as its pool frees up, receives
them on its inbox (stdin) and hands each row back as an event. The "sweep" job runs a queue of
its own with itself as the one worker, keeping `sweep.json` in its run folder as rows land, with
the config being timed, so a cancel keeps what finished and `--resume` goes on past a config that
hung or killed the process. A watchdog ends the process when one config overruns its time (a hung
kernel cannot be stopped otherwise); its runner blames that config and goes on. A search strategy
other than exhaustive takes a whole shape as one item: every config compiled, only those the
strategy asks for timed, one after another on this worker's GPU.
"""

from __future__ import annotations

import contextlib
import copy
import json
import multiprocessing
import os
import queue
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, as_completed, wait
from pathlib import Path
from typing import Any

from workbench.catalog.spec import KernelSpec, Shape
from workbench.ir.capture import Launch, capture, compile_mode
from workbench.ir.config import OPTION_NAMES, split_options
from workbench.ir.occupancy import DEFAULT_ARCH
from workbench.run.faults import problem_from_exception
from workbench.run.params import SweepParams
from workbench.runtime import compat, gpu_lock
from workbench.runtime.errors import Problem, WorkbenchError, fail
from workbench.runtime.grammar import shape_text
from workbench.sweep import analysis, facts, space, strategy
from workbench.sweep.analysis import RESULT_FILE
from workbench.sweep.pool import CompilePool
from workbench.sweep.queue import WorkQueue
from workbench.sweep.result import SweepResult
from workbench.sweep.row import Check, ConfigAt, Round, SweepRow
from workbench.sweep.space import Values
from workbench.sweep.strategy import Budget

MIN_ARCH = 75
BACKLOG = 2
"""Compiled configs waiting for the GPU past which a worker asks for no more: what one worker
holds, another cannot take."""
BENCHES = 2
"""Shapes whose inputs and references a worker keeps on the GPU at once."""
COUNT_WAIT_S = {"timed": 0.0, "static": 60.0}
"""How long a worker told to end waits for FLOP counts still under way. A process's first count
imports PyTorch's reference operators (6.5 s on the GPU host, where a 16-config sweep's rows are
all in 1.5 s after its start): a timed sweep ends with the counts that have landed and says
which did not (a longer sweep has them all); a static sweep, with no timings to give, waits for
what the model reads."""
UNCOUNTED = (
    "{shape}: the reference's FLOPs were still being counted (on PyTorch's meta device, whose "
    "first use takes seconds) when the sweep ended, and the model went without them (one GEMM "
    "per launch, where it tiles one); a `flops` formula in the kernel's spec gives them at once"
)
LAST_WORDS_S = 1.0
"""How long the watchdog waits, once it has said which config overran, before ending the
process: the event must reach the runner (a Ray actor's stream sends it on its own time)."""
Emit = Callable[[dict], None]


def job(spec: KernelSpec, params: SweepParams, ctx: Any) -> dict:
    """The "sweep" job: the whole sweep in this process, a queue of its own."""
    with _sweep(spec, params, ctx) as sweep:
        return sweep.alone().to_dict()


def worker(spec: KernelSpec, params: SweepParams, ctx: Any) -> dict:
    """The "sweep-worker" job: one worker of its runner's queue, until the runner says the end;
    its result is its own timings (the rows went out as events)."""
    with _sweep(spec, params, ctx) as sweep:
        sweep.work(ctx.inbox, ctx.emit)
        return {"timings": sweep.timings}


class _sweep:
    """A Sweep with its compile pool, started before any CUDA use and closed at the end."""

    def __init__(self, spec: KernelSpec, params: SweepParams, ctx: Any):
        compat.require_supported()
        self.gpu = ctx.device.startswith("cuda")
        self.spec, self.params, self.ctx = compile_mode(spec, ctx.file), params, ctx

    def __enter__(self) -> Sweep:
        start = time.perf_counter()
        self.pool = CompilePool(self.params.jobs or os.cpu_count() or 1, self.spec)
        timings = {"pool_start_s": round(time.perf_counter() - start, 3)}
        if self.gpu:  # the pool has forked: CUDA may start now, before the worker is ready
            start = time.perf_counter()
            _cuda_context(self.ctx.device)
            timings["cuda_init_s"] = round(time.perf_counter() - start, 3)
        sweep = Sweep(self.spec, self.params, self.ctx, self.gpu, self.pool)
        sweep.timings.update(timings)
        return sweep

    def __exit__(self, *exc: object) -> None:
        self.pool.close()


class Sweep:
    def __init__(
        self, spec: KernelSpec, params: SweepParams, ctx: Any, gpu: bool, pool: CompilePool
    ):
        self.spec, self.params, self.ctx, self.pool = spec, params, ctx, pool
        device_arch = compat.device_arch() if gpu else None
        self.arch = _arch(params.arch, device_arch)
        self.timed = gpu and self.arch == device_arch and params.time
        self.gpu_name = _gpu_name() if gpu else None
        self.dtype = params.dtype or (spec.dtypes[0] if spec.dtypes else None)
        self.done = _previous(params.resume)
        self.timings: dict[str, float] = {}
        self.launches: dict[str, tuple[Launch, Any]] = {}
        self.benches: dict[str, dict] = {}
        self.best: dict[str, float] = {}
        self.current: tuple[float, ConfigAt, int] | None = None
        self.counting: dict[Future, tuple[list, Launch]] = {}
        """FLOP counts under way in the pool: the shape and launch each is for."""
        self.inbox: queue.Queue = queue.Queue()
        self.emit: Emit = ctx.emit
        self.strategy = params.strategy

    def head(self) -> dict:
        """The result's header as this worker sees it (its `ready` event)."""
        import triton

        return {
            "kernel": self.spec.name,
            "mode": "gpu" if self.timed else "cross-compile",
            "arch": f"sm_{self.arch}",
            "gpu": self.gpu_name,
            "gpu_index": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "host": socket.gethostname(),
            "triton_version": triton.__version__,
            "dtype": self.dtype,
            "space": self.params.space,
            "jobs": self.pool.jobs,
            "device": facts.device(self.timed, self.dtype),
        }

    def alone(self) -> SweepResult:
        """The whole sweep with this process as the one worker of its own queue."""
        start = time.perf_counter()
        work = WorkQueue(self.params.config_timeout)
        inbox: queue.Queue[dict | None] = queue.Queue()
        file = Path(self.ctx.run_dir) / RESULT_FILE

        def emit(event: dict) -> None:
            for _, message in work.on_event("", event):
                inbox.put(message)
            if event["event"] in ("config", "triton", "searched", "running"):
                _save(work, file, self.current)  # before anyone is told: a cancel keeps it
            if event["event"] in ("config", "config-timeout"):
                self.ctx.emit(event)
            if event["event"] == "config":
                self.ctx.emit({**work.progress(), "case": event["row"]["label"]})

        self.work(inbox, emit)
        self.timings["total_s"] = round(time.perf_counter() - start, 3)
        work.on_event("", {"event": "result", "result": {"timings": self.timings}})
        _save(work, file, None)
        result = work.result()
        assert result is not None  # this worker said it was ready before its first row
        return result

    def work(self, inbox: queue.Queue, emit: Emit) -> None:
        """The worker loop: ask for items as the pool frees up, compile them ahead, check and
        time each as its compile lands (GPU work first, new messages before it), and hand each
        row back; plan the shapes when asked to; return when told to end."""
        self.emit, self.inbox = emit, inbox
        threading.Thread(target=self._watch, daemon=True).start()
        emit({"event": "ready", "head": self.head()})
        compiling: dict[Future, dict] = {}
        compiled: deque[tuple[dict, Future | None]] = deque()
        asked = False
        while True:
            if not asked and len(compiling) < self.pool.jobs and len(compiled) < BACKLOG:
                emit({"event": "want", "n": self.pool.jobs - len(compiling)})
                asked = True
            if compiled and inbox.empty():
                self._finish(*compiled.popleft())
                continue
            if compiled:
                message = inbox.get()
            else:  # nothing to check or time: the GPU waits on the queue or the compiles
                started = time.perf_counter()
                message = inbox.get()
                self._add_time("wait_s", time.perf_counter() - started)
            if message is None or message.get("end"):
                if self.counting:  # the sweep's end waits on them a little: say how long
                    started = time.perf_counter()
                    limit = COUNT_WAIT_S["timed" if self.timed else "static"]
                    for future in wait(list(self.counting), timeout=limit).done:
                        self._counted(future)
                    self._add_time("count_wait_s", time.perf_counter() - started)
                    for shape, _ in self.counting.values():
                        where = shape_text(shape) if shape else "get_inputs()"
                        note = UNCOUNTED.format(shape=where)
                        emit({"event": "problem", "shape": shape, "notes": [note]})
                return
            if "counted" in message:
                self._counted(message["counted"])
            elif "compiled" in message:
                future = message["compiled"]
                compiled.append((compiling.pop(future), future))
            elif message.get("plan"):
                self._plan()
                asked = False
            elif "items" in message:
                asked = False
                for text, ms in message.get("best", {}).items():
                    self.best[text] = min(ms, self.best.get(text) or ms)
                for item in message["items"]:
                    future = None if "values" not in item else self._submit(item)
                    if future is not None:
                        compiling[future] = item
                        future.add_done_callback(lambda f: inbox.put({"compiled": f}))
                    elif "values" not in item:  # Triton's pick, or a shape's search
                        compiled.append((item, None))
                if not compiled:
                    self._prepare(message["items"])

    def _plan(self) -> None:
        """Each shape's configs in order, with the rows already known (an earlier run's, those the
        kernel's own prune drops), as one `plan` event per shape."""
        shapes = [tuple(s) for s in self.params.shapes or []] or _default_shapes(self.spec)
        pick = self.params.triton_pick
        for n, shape in enumerate(shapes):
            base, tuner = self._launch(shape)
            configs = _configs(self.params.space, tuner, base)
            own = self.params.space == "own"
            dropped, note = _tuner_prunes(tuner, base, configs, own)
            notes = [note] if note else []
            if self.timed and tuner is not None and not pick:
                notes.append("Triton's own pick was not run (--no-triton-pick)")
            if self.strategy != "exhaustive" and not self.timed:
                notes.append(
                    f"--strategy {self.strategy} chooses which configs to time, and nothing is "
                    "timed here (no GPU, or another --arch): every config is compiled and shown "
                    "static"
                )
            text = shape_text(shape)
            formula = facts.formula_flops(self.spec, shape)
            out = []
            for values in configs:
                label = space.key(values)
                prior = self.done.get((text, label))
                row = prior or _blank(shape, values, base, tuner)
                if prior is None and label in dropped:
                    row.update(status="pruned", reason=dropped[label])
                out.append({"row": row, "todo": prior is None and label not in dropped})
            self.emit(
                {
                    "event": "plan",
                    "shape": list(shape),
                    "configs": out,
                    "triton": bool(self.timed and tuner is not None and pick),
                    "search": self.timed and self.strategy != "exhaustive",
                    # what the static model explains the losers by (FLOPs to count: later)
                    "problem": facts.problem(base, self.dtype, formula),
                    "notes": notes,
                    "last": n == len(shapes) - 1,
                }
            )
            if self.spec.flops is None:
                self._count(shape, base)

    def _count(self, shape: Shape, base: Launch) -> None:
        """Count the reference's FLOPs at `shape` in a compile worker; its `problem` event follows
        when the count lands (a note instead, when it has not landed by the sweep's end)."""
        future = self.pool.count_flops(shape, self.dtype)
        self.counting[future] = (list(shape), base)
        future.add_done_callback(lambda f: self.inbox.put({"counted": f}))

    def _counted(self, future: Future) -> None:
        if future not in self.counting:  # said already, at the end
            return
        shape, base = self.counting.pop(future)
        try:
            flops = future.result()
        except Exception:  # noqa: BLE001 - an uncountable reference leaves the model without FLOPs
            flops = None
        if flops is not None:
            problem = facts.problem(base, self.dtype, flops)
            self.emit({"event": "problem", "shape": shape, "problem": problem})

    def _launch(self, shape: Shape) -> tuple[Launch, Any]:
        """The launch to sweep at `shape` and its Autotuner, captured once per shape."""
        text = shape_text(shape)
        if text not in self.launches:
            started = time.perf_counter()
            self.launches[text] = _target(capture(self.spec, self.ctx.device, self.dtype, shape))
            self._add_time("capture_s", time.perf_counter() - started)
        return self.launches[text]

    def _submit(self, item: dict) -> Future | None:
        """Start the item's compile; None when the config cannot even bind (its row is sent)."""
        shape = tuple(item["shape"])
        base, tuner = self._launch(shape)
        hook = tuner.configs[0].pre_hook if tuner is not None and tuner.configs else None
        row = item["row"] = _blank(shape, item["values"], base, tuner)
        folder = Path(self.ctx.run_dir) / "cubins" / shape_text(shape).replace(" ", "")
        try:
            if hook is not None:  # the kernel's own code runs now: a death here is this config's
                self._running(row, item["id"])
            launch = config_launch(base, item["values"], hook)
            row["programs"] = launch.programs()
            return self.pool.submit(launch, self.arch, folder / f"{item['id']}_{base.name}.cubin")
        except Exception as exc:  # noqa: BLE001 - a config that cannot even bind is a row
            row.update(status="failed", problem=problem_from_exception(exc).to_dict())
            self.emit({"event": "config", "id": item["id"], "row": row})
            return None
        finally:
            self.current = None

    def _finish(self, item: dict, future: Future | None) -> None:
        """A compiled item: checked and timed on a GPU (Triton's pick, for its item)."""
        shape = tuple(item["shape"])
        if future is None:
            self._search(item) if "search" in item else self._triton(item)
            return
        row: SweepRow = item["row"]
        self._compiled(row, future)
        if self.timed and row["status"] == analysis.TIMED:
            base, tuner = self._launch(shape)
            started = time.perf_counter()
            self._time_row(row, item["id"], tuner if tuner is not None else base.fn)
            self._add_time("timing_s", time.perf_counter() - started)
        elif row["status"] == analysis.TIMED:
            row["status"] = "static"
        self.emit({"event": "config", "id": item["id"], "row": row})

    def _compiled(self, row: SweepRow, future: Future) -> None:
        """The compile's facts on the config's row: failed, pruned, or to be timed."""
        out = future.result()
        if out["problem"]:
            row.update(status="failed", problem=out["problem"], compile_s=out["compile_s"])
            return
        space_name = self.params.space
        reason = analysis.prune_reason(out["resources"], drop_spills=space_name == "auto")
        row.update(
            status="pruned" if reason else analysis.TIMED,
            reason=reason,
            compile_s=out["compile_s"],
            hash=out["hash"],
            resources=out["resources"],
        )

    def _prepare(self, items: list[dict]) -> None:
        """Make the first new shape's inputs and reference while its configs compile, rather than
        after the first compile lands (0.3-0.4 s of a 16-config sweep's critical path on an H100).
        A failure here is left to the config that needs them, which names it."""
        if not self.timed or len(self.benches) >= BENCHES:
            return
        new = [tuple(i["shape"]) for i in items if shape_text(i["shape"]) not in self.benches]
        if new:
            with contextlib.suppress(Exception):  # raised again, with its config, by _time_row
                self._bench(new[0])

    def _bench(self, shape: Shape) -> dict:
        """The shape's inputs and references, made once per shape, with the reference side of
        the check prepared (its own error and bounds: the same for every config)."""
        import torch

        from workbench.check import exact
        from workbench.check.compare import Reference
        from workbench.runtime import tensors

        text = shape_text(shape)
        if text not in self.benches:
            started = time.perf_counter()
            tdtype = tensors.torch_dtype(self.dtype) if self.dtype else None
            inputs = tuple(self.spec.make_inputs(shape, tdtype, self.ctx.device))
            wider = exact.run(self.spec.reference_fn, inputs)
            ref = tensors.outputs(self.spec.reference_fn(*inputs))
            while len(self.benches) >= BENCHES:  # items come shape by shape: the oldest is done
                self.benches.pop(next(iter(self.benches)))
            torch.cuda.synchronize()  # the references' time is theirs, not the first check's
            self._add_time("inputs_s", time.perf_counter() - started)
            started = time.perf_counter()
            reference = Reference(self.spec, ref, self.dtype, wider)
            self._add_time("reference_s", time.perf_counter() - started)
            self.benches[text] = {"inputs": inputs, "reference": reference}
        return self.benches[text]

    def _time_row(self, row: SweepRow, item: int, target: Any, samples: int | None = None) -> None:
        """Check the config's output against the reference (once), then time it (`samples`: a
        light timing of that many); failures are rows. The seconds each part took are kept."""
        import torch

        from workbench.bench.timing import adaptive_ms
        from workbench.check.result import CaseResult
        from workbench.runtime import tensors

        text = shape_text(row["shape"])
        bench = self._bench(tuple(row["shape"]))
        self._running(row, item)
        call = lambda: self.spec.kernel_fn(*bench["inputs"])  # noqa: E731
        started, part = time.perf_counter(), "check_s"
        try:
            with compat.pinned(target, *split_options(row["values"])):
                if row.get("check") is None:
                    with tensors.poisoned_allocations():
                        out = tensors.outputs(call())
                    torch.cuda.synchronize()
                    case = CaseResult("sweep", row["shape"], self.dtype or "as given", "contiguous")
                    bench["reference"].judge(case, out)
                    row["check"] = Check(
                        max_abs_diff=case.max_abs_diff, rel_l2=case.rel_l2, bad=case.bad
                    )
                    row["check_s"] = round(time.perf_counter() - started, 4)
                    if case.status != "passed":
                        row.update(status="wrong", reason=f"wrong result: {case.reason}")
                        row["timing_s"] = 0.0
                        return
                started, part = time.perf_counter(), "timing_s"
                best = self.best.get(text)
                with gpu_lock.alone(self.ctx.device):
                    timing = adaptive_ms(call, best, samples)
                row.update(**timing)
                row["timing_s"] = round(time.perf_counter() - started, 4)
                if samples is None:  # a light timing is too rough to stop others early
                    self.best[text] = timing["ms"] if best is None else min(best, timing["ms"])
        except Exception as exc:  # noqa: BLE001 - a failing config is a row; the next one runs
            row[part] = round(time.perf_counter() - started, 4)
            problem = (
                exc.problem if isinstance(exc, WorkbenchError) else problem_from_exception(exc)
            )
            row.update(status="failed", problem=problem.to_dict())
            if problem.kind == "cuda-error":  # the context is gone: this worker ends here
                self.current = None
                self.emit({"event": "config", "id": item, "row": row})
                raise WorkbenchError(Problem(**problem.to_dict())) from exc
        finally:
            self.current = None

    def _search(self, item: dict) -> None:
        """One shape's search by a strategy other than exhaustive: every config compiled (the
        static start and the rows left untimed need every config's facts), then only those the
        strategy asks for timed. Coordinate descent beyond the kernel's own configs starts from
        Triton's pick, so Triton's autotuner runs first there. Rows already known (an earlier
        run's, or this search's before its worker died) answer what they timed, so a search
        taken up again retraces its steps. Each row goes back as it is decided, again as later
        rounds time it."""
        shape = tuple(item["shape"])
        text = shape_text(shape)
        base, tuner = self._launch(shape)
        configs = [{**c, "shape": item["shape"]} for c in item["search"]]
        known = {c["row"]["label"]: c for c in configs if c.get("row")}
        futures: dict[Future, dict] = {}
        for config in configs:
            future = None if config.get("row") else self._submit(config)
            if future is not None:
                futures[future] = config
        for future in as_completed(futures):
            self._compiled(futures[future]["row"], future)
        fresh = {c["row"]["label"]: c for c in futures.values()}
        ids = {label: c["id"] for label, c in {**known, **fresh}.items()}
        rows: list[SweepRow] = []
        for values in _configs(self.params.space, tuner, base):
            label = space.key(values)
            config = fresh.get(label) or known.get(label)
            row = config["row"] if config else self.done.get((text, label))
            if row and row.get("resources") and row["status"] != "pruned":
                rows.append(row)
        space_labels = {r["label"] for r in rows}
        for label, config in fresh.items():
            if label not in space_labels:  # failed to compile, or pruned
                self.emit({"event": "config", "id": config["id"], "row": config["row"]})
        name = self.strategy
        budget = Budget(**self.params.budget) if self.params.budget else None
        budget = budget or strategy.default_budget(name, len(rows))
        start = None
        pick = None
        if name == "coordinate" and rows:
            if tuner is not None and strategy.starts_from_triton(self.params.space):
                pick = self._triton(item)  # its start: Triton's pick, timed first
            start = strategy.static_start(rows, (pick or {}).get("label"))
        by_label = {r["label"]: r for r in rows}
        count = 0
        target = tuner if tuner is not None else base.fn

        def evaluate(values: Values, samples: int | None) -> SweepRow:
            nonlocal count
            row = by_label[space.key(values)]
            count += 1
            answer = _recorded(row, samples)
            if answer is not None:
                return answer
            row.setdefault("chosen_by", name)
            row.setdefault("order", count)
            checked = row.get("check") is not None
            started = time.perf_counter()
            self._time_row(row, ids.get(row["label"], -1), target, samples)
            self._add_time("timing_s", time.perf_counter() - started)
            if samples is not None or "rounds" in row:  # successive halving's rounds
                row.setdefault("rounds", []).append(
                    Round(
                        samples=row["samples"],
                        ms=row["ms"],
                        p20=row["p20"],
                        p80=row["p80"],
                        timing_s=row.get("timing_s"),
                    )
                )
            if row["label"] in ids:
                self.emit({"event": "config", "id": ids[row["label"]], "row": row})
            return {**row, "check_s": 0.0 if checked else row.get("check_s")}

        seed = self.params.seed
        found = strategy.Space([r["values"] for r in rows])
        trace = strategy.search(name, found, evaluate, budget, seed, start and start[0])
        for row in rows:
            if row["label"] in ids and row.get("samples", 0) == 0 and row["status"] == "ok":
                row.update(status="skipped", reason=f"{name} chose others ({budget.text()})")
                self.emit({"event": "config", "id": ids[row["label"]], "row": row})
        shape_trace = {
            "configs": len(rows),
            "start": {"label": start[0], "from": start[1]} if start else None,
            **trace.summary(),
        }
        head = {"name": name, "budget": budget.to_dict(), "seed": seed}
        self.emit({"event": "searched", "id": item["id"], "strategy": head, "trace": shape_trace})

    def _triton(self, item: dict) -> dict:
        """Triton's own autotuner on the shape's inputs (its configs compiled by now)."""
        from workbench.sweep.tuner import persisted, triton_pick

        started = time.perf_counter()
        shape = tuple(item["shape"])
        base, tuner = self._launch(shape)
        bench = self._bench(shape)
        self._running(
            {"shape": item["shape"], "label": "Triton's own pick", "values": {}}, item["id"]
        )
        try:
            pick = triton_pick(tuner, lambda: self.spec.kernel_fn(*bench["inputs"]))
        except Exception as exc:  # noqa: BLE001 - the comparison is optional; say why it is missing
            pick = {"label": None, "problem": problem_from_exception(exc).to_dict()}
        finally:
            self.current = None
        self._add_time("triton_s", time.perf_counter() - started)
        event = {"event": "triton", "shape": shape_text(shape), "pick": pick}
        self.emit({**event, "persisted": persisted(tuner)})
        return pick

    def _add_time(self, name: str, seconds: float) -> None:
        self.timings[name] = round(self.timings.get(name, 0.0) + seconds, 3)

    def _running(self, config: ConfigAt, item: int) -> None:
        """Say which config runs now: what a death or the watchdog blames."""
        self.current = (time.monotonic(), config, item)
        self.emit({"event": "running", "id": item})

    def _watch(self) -> None:
        """End the process (and its compile workers) when one config overruns: a hung kernel
        cannot be interrupted; the running config is named first, so that it is blamed alone."""
        limit = self.params.config_timeout
        while True:
            time.sleep(0.5)
            current = self.current
            if current and time.monotonic() - current[0] > limit:
                self.emit(
                    {"event": "config-timeout", "id": current[2], "label": current[1]["label"]}
                )
                time.sleep(LAST_WORDS_S)
                for child in multiprocessing.active_children():
                    child.kill()
                os._exit(124)


def _save(work: WorkQueue, file: Path, current: tuple[float, ConfigAt, int] | None) -> None:
    """sweep.json as it stands, naming the config running (what --resume blames if this process
    ends on it)."""
    record = work.record()
    if record is None:
        return
    if current is not None:
        config = current[1]  # a row, or Triton's pick: what names the config is kept
        record.running = ConfigAt(
            shape=config["shape"], label=config["label"], values=config["values"]
        )
    tmp = file.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.record(), default=str))
    tmp.replace(file)  # a killed process leaves the last whole file


def config_launch(base: Launch, values: Values, pre_hook: Any) -> Launch:
    """The base launch with a config's values; a config pre_hook (e.g. one that sets TMA
    descriptors' block shapes) runs on copies of the arguments, as the autotuner runs it."""
    launch = base.with_values(values)
    if pre_hook is None:
        return launch
    names = [p.name for p in launch.fn.params]
    args = [copy.copy(a) for a in launch.args]
    kwargs = {k: copy.copy(v) for k, v in launch.kwargs.items()}
    for a in [*args, *kwargs.values()]:
        if hasattr(a, "block_shape"):
            a.block_shape = list(a.block_shape)
    pre_hook({**dict(zip(names, args)), **kwargs})
    return Launch(launch.fn, tuple(args), kwargs, launch.tuned, launch.grid)


def _recorded(row: SweepRow, samples: int | None) -> SweepRow | None:
    """The row's answer to a timing at `samples` (None: the full one) when it already holds it
    (this run's or the resumed run's): a failure, a timing of that many samples, or a full
    timing, which answers a light one too; else None."""
    if row["status"] in analysis.FAILED:
        return {**row, "check_s": 0.0, "timing_s": 0.0}
    if row["status"] != analysis.TIMED or row["ms"] is None:
        return None
    done = [r for r in row.get("rounds", []) if r["samples"] == samples]
    if done:
        r = done[0]
        return {
            **row,
            "samples": r["samples"],
            "ms": r["ms"],
            "p20": r["p20"],
            "p80": r["p80"],
            "timing_s": r["timing_s"],
            "check_s": 0.0,
        }
    return {**row, "check_s": 0.0} if row.get("stop") != "light" else None


def _target(launches: list[Launch]) -> tuple[Launch, Any]:
    """The launch to sweep (the first autotuned one, else the first) and its Autotuner; a bare
    launch of a function that an Autotuner also wraps is swept as launched."""
    for launch in launches:
        tuner = _autotuner(launch.fn) if launch.tuned else None
        if tuner is not None:
            return launch, tuner
    return launches[0], None


def _autotuner(fn: Any) -> Any:
    """The Autotuner around `fn` among its module's globals: a plain user module with
    @triton.autotune needs no spec to name it."""
    import sys

    tune_cls = compat.launcher_classes()["autotune"]
    module = sys.modules.get(fn.fn.__module__)
    for value in vars(module).values() if module else ():
        if isinstance(value, tune_cls) and compat.base_function(value) is fn:
            return value
    return None


def _configs(name: str, tuner: Any, base: Launch) -> list[Values]:
    if tuner is None and compat.is_gluon(base.fn):
        raise fail(
            "gluon-kernel",
            f"{base.name} is a Gluon kernel: its layouts, partitions and warps are written in its "
            "code and its tiles are its launcher's (TMA descriptors), so no config of its own "
            "constexprs and options is another valid kernel",
            "time its launcher's choices with a script of your own (benchmarks/attention_gluon.py "
            "does it for the library's attention), or sweep a shape or dtype it does not take",
        )
    if name == "own":
        if tuner is None:
            raise fail(
                "no-autotune",
                f"{base.name} has no @triton.autotune configs of its own",
                "use --space auto (generated from its tile parameters) or --space FILE",
            )
        return [_values_of(c) for c in tuner.configs]
    if name == "neighbours" and tuner is not None:
        raise fail(
            "autotuned",
            f"{base.name} runs through @triton.autotune: which config it launches is the "
            "tuner's pick, so it has no one config to step from",
            "sweep its own configs (--space own) or a generated space (--space auto)",
        )
    if name in ("auto", "neighbours"):
        base_values = _configs("own", tuner, base)[0] if tuner is not None else _launch_values(base)
        return space.generate(base_values) if name == "auto" else space.neighbours(base_values)
    return space.from_file(name)


def _tuner_prunes(
    tuner: Any, base: Launch, configs: list[Values], own: bool
) -> tuple[dict[str, str], str]:
    """(label -> why, note): the configs the kernel's own `prune_configs_by` drops for these
    arguments, since Triton would never run them here: for its own configs its early_config_prune
    and perf_model with top_k; for any other space the early_config_prune alone, which says what
    the kernel can run at all (a perf model's top_k ranks the kernel's list, not a generated one).
    The note says when the hook could not run (one that needs a GPU, say) and all were kept."""
    if tuner is None or not (tuner.early_config_prune or (own and tuner.perf_model)):
        return {}, ""
    from triton import Config

    # as Autotuner.run calls the hook: the positional arguments by name, the call's keywords
    # (a constexpr such as HEAD_DIM) apart, less what the tuner's own configs set
    tuned = {k for c in tuner.configs for k in c.all_kwargs()}
    kwargs = {k: v for k, v in base.kwargs.items() if k not in tuned}
    saved = getattr(tuner, "nargs", None), tuner.configs, tuner.perf_model
    tuner.nargs = dict(zip(tuner.arg_names, base.args))
    if not own:
        hook = tuner.configs[0].pre_hook if tuner.configs else None
        tuner.configs = [Config(c, pre_hook=hook, **o) for c, o in map(split_options, configs)]
        tuner.perf_model = None
    candidates = tuner.configs  # the pruned list holds the same objects
    try:
        kept = {id(c) for c in tuner.prune_configs(kwargs)}
    except Exception as exc:  # noqa: BLE001 - the hook failed here: sweep every config
        return {}, f"prune_configs_by raised {type(exc).__name__}: {exc}; every config swept"
    finally:
        tuner.nargs, tuner.configs, tuner.perf_model = saved
    why = "dropped by the kernel's prune_configs_by for these arguments"
    return {space.key(v): why for v, c in zip(configs, candidates) if id(c) not in kept}, ""


def _values_of(config: Any) -> Values:
    """A triton.Config as one flat dict of constexprs and the options it sets."""
    return space.config_values(config.kwargs, **{k: getattr(config, k, None) for k in OPTION_NAMES})


def _launch_values(launch: Launch) -> Values:
    values = {k: getattr(v, "value", v) for k, v in launch.constexprs().items()}
    return {
        **values,
        "num_warps": launch.kwargs.get("num_warps", 4),
        "num_stages": launch.kwargs.get("num_stages", 3),
    }


def _row(shape: Shape, values: Values) -> SweepRow:
    return {
        "shape": list(shape),
        "label": space.key(values),
        "values": values,
        "status": analysis.TIMED,
        "reason": "",
        "compile_s": None,
        "resources": None,
        "ms": None,
        "p20": None,
        "p80": None,
        "samples": 0,
        "check": None,
        "problem": None,
    }


def _blank(shape: Shape, values: Values, base: Launch, tuner: Any) -> SweepRow:
    """A config's row before it runs; "launched" marks the config the kernel runs as written
    (an autotuned one's pick is not known here)."""
    launched = space.key(_launch_values(base)) if tuner is None else None
    return {**_row(shape, values), "launched": space.key(values) == launched}


def _previous(path: str | None) -> dict[tuple[str, str], SweepRow]:
    """Finished rows of an earlier run by (shape, config); the config it was running when it
    ended becomes a "timeout" row, so the sweep goes on past it."""
    if not path:
        return {}
    try:
        earlier = SweepResult.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise fail(
            "bad-resume",
            f"cannot read the earlier sweep {path}: {exc}",
            "run the sweep without --resume",
        ) from exc
    rows = {(shape_text(r["shape"]), r["label"]): r for r in earlier.rows}
    running = earlier.running
    if running:
        row = _row(tuple(running["shape"]), running["values"])
        row["status"] = "timeout"
        row["problem"] = Problem(
            "config-timeout",
            "the earlier run ended while this config ran (it hung, overran its time or crashed)",
            "profile it alone, or drop it from the space",
        ).to_dict()
        rows[(shape_text(running["shape"]), running["label"])] = row
    return rows


def _arch(text: Any, device_arch: int | None) -> int:
    if not text:
        return device_arch or DEFAULT_ARCH
    arch = int(text)
    known = compat.cross_archs()
    if arch not in known or arch < MIN_ARCH:
        names = ", ".join(f"sm_{a}" for a in known if a >= MIN_ARCH)
        raise fail(
            "unsupported-arch",
            f"this Triton's ptxas cannot compile for sm_{arch}",
            f"pick one of {names}, or install a Triton whose ptxas knows sm_{arch}",
        )
    return arch


def _default_shapes(spec: KernelSpec) -> list[Shape]:
    if "bench" in spec.shapes:
        return spec.shape_set("bench")
    first = next(iter(spec.shapes))
    return spec.shape_set(first)[:1]


def _cuda_context(device: str) -> None:
    """Create the device's CUDA context (torch's first allocation does): made on the first
    capture instead, it held back the first compiles and was counted as capturing."""
    import torch

    torch.cuda.init()
    torch.empty(1, device=device)
    torch.cuda.synchronize(device)


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name()
