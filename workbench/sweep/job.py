"""The "sweep" job (child process): compile every config in parallel, and on a GPU check each
against the reference and time it on the same inputs; Triton's own pick beside it.

Rows go to `sweep.json` in the run folder as they finish, with the config being run, so a
cancel keeps what finished, `--resume` continues, and a config that hangs or kills the process
is recorded as such by the next run. A watchdog ends the process when one config overruns its
time (a hung kernel cannot be stopped otherwise); the parent resumes after it.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, as_completed
from pathlib import Path
from typing import Any

from workbench.catalog.spec import KernelSpec, Shape
from workbench.ir.capture import Launch, capture, compile_mode
from workbench.ir.config import OPTION_NAMES, split_options
from workbench.run.faults import problem_from_exception
from workbench.runtime import compat, gpu_lock
from workbench.runtime.errors import Problem, WorkbenchError, fail
from workbench.runtime.grammar import shape_text
from workbench.sweep import analysis, facts, space, strategy
from workbench.sweep.analysis import RESULT_FILE
from workbench.sweep.pool import CompilePool
from workbench.sweep.result import SweepResult
from workbench.sweep.space import Values
from workbench.sweep.strategy import Budget

DEFAULT_ARCH = 90
MIN_ARCH = 75
CONFIG_TIMEOUT = 120.0


def job(spec: KernelSpec, params: dict, ctx: Any) -> dict:
    compat.require_supported()
    gpu = ctx.device.startswith("cuda")
    spec = compile_mode(spec, ctx.file)
    start = time.perf_counter()
    pool = CompilePool(int(params.get("jobs") or os.cpu_count() or 1))  # before any CUDA use
    try:
        sweep = Sweep(spec, params, ctx, gpu, pool)
        sweep.result.timings["pool_start_s"] = round(time.perf_counter() - start, 3)
        return sweep.run().to_dict()
    finally:
        pool.close()


class Sweep:
    def __init__(self, spec: KernelSpec, params: dict, ctx: Any, gpu: bool, pool: CompilePool):
        import triton

        self.spec, self.params, self.ctx, self.pool = spec, params, ctx, pool
        device_arch = compat.device_arch() if gpu else None
        self.arch = _arch(params.get("arch"), device_arch)
        # "time": False keeps a GPU sweep static (resources only), as `diagnose` gathers them
        self.timed = gpu and self.arch == device_arch and params.get("time", True)
        self.dtype = params.get("dtype") or (spec.dtypes[0] if spec.dtypes else None)
        self.file = Path(ctx.run_dir) / RESULT_FILE
        self.done = _previous(params.get("resume"))
        self.lock = threading.Lock()
        self.current: tuple[float, dict] | None = None
        self.result = SweepResult(
            kernel=spec.name,
            mode="gpu" if self.timed else "cross-compile",
            arch=f"sm_{self.arch}",
            gpu=_gpu_name() if gpu else None,
            gpu_index=os.environ.get("CUDA_VISIBLE_DEVICES"),
            triton_version=triton.__version__,
            dtype=self.dtype,
            space=params.get("space") or "own",
            jobs=pool.jobs,
            shard=params.get("shard"),
            device=facts.device(self.timed, self.dtype),
        )
        self.strategy = params.get("strategy") or "exhaustive"
        if self.strategy != "exhaustive" and not self.timed:
            self.result.notes.append(
                f"--strategy {self.strategy} chooses which configs to time, and nothing is timed "
                "here (no GPU, or another --arch): every config is compiled and shown static"
            )

    def run(self) -> SweepResult:
        start = time.perf_counter()
        threading.Thread(target=self._watch, daemon=True).start()
        shapes = [tuple(s) for s in self.params.get("shapes") or []] or _default_shapes(self.spec)
        for shape in shapes:
            self._shape(shape)
        self.result.complete = True
        self.result.timings["total_s"] = round(time.perf_counter() - start, 3)
        self._save()
        return analysis.summarize(self.result)

    def _shape(self, shape: Shape) -> None:
        phase = time.perf_counter()
        launches = capture(self.spec, self.ctx.device, self.dtype, shape)
        base, tuner = _target(launches)
        configs = _configs(self.params.get("space") or "own", tuner, base)
        shard = self.params.get("shard")
        if shard:
            configs = configs[shard[0] :: shard[1]]
        text = shape_text(shape)
        # what the static model explains the losers by
        self.result.problems[text] = facts.problem(
            self.spec, base, shape, self.dtype, self.ctx.device
        )
        dropped, note = (
            _tuner_prunes(tuner, base, configs)
            if self.params.get("space") in (None, "own")
            else ({}, "")
        )
        if note:
            self.result.notes.append(note)
        todo = []
        for values in configs:
            prior = self.done.get((text, space.key(values)))
            if prior is not None:
                self._add(prior)
            elif space.key(values) in dropped:
                why = dropped[space.key(values)]
                self._add({**_row(shape, values), "status": "pruned", "reason": why})
            else:
                todo.append(values)
        total = len(configs)
        self._emit_progress(total - len(todo), total, text)
        futures = self._submit(base, tuner, shape, todo)
        self._add_time("capture_s", time.perf_counter() - phase)
        bench = self._bench_setup(shape) if self.timed else None
        target = tuner if tuner is not None else base.fn
        if bench is not None and self.strategy != "exhaustive":
            self._search(shape, configs, futures, bench, target, tuner)
            futures = {}  # the search has taken every compile: the loop below has none left
        for future in as_completed(futures):
            row = futures[future]
            row.update(self._compiled(future))
            if bench is not None and row["status"] == analysis.TIMED:
                started = time.perf_counter()
                self._time_row(row, bench, target)
                self._add_time("timing_s", time.perf_counter() - started)
            elif row["status"] == analysis.TIMED:
                row["status"] = "static"
            self._add(row)
            self._emit_progress(
                sum(r["shape"] == list(shape) for r in self.result.rows), total, row["label"]
            )
        self._add_time("sweep_s", time.perf_counter() - phase)
        if bench is not None and tuner is not None and not (shard and shard[0]):
            if text not in self.result.triton:  # coordinate descent asked for it already
                started = time.perf_counter()
                self._triton(text, tuner, bench)  # beside the sweep, outside its sweep_s
                self._add_time("triton_s", time.perf_counter() - started)

    def _submit(self, base: Launch, tuner: Any, shape: Shape, todo: list[Values]) -> dict:
        hook = tuner.configs[0].pre_hook if tuner is not None and tuner.configs else None
        folder = Path(self.ctx.run_dir) / "cubins" / shape_text(shape).replace(" ", "")
        futures: dict[Future, dict] = {}
        # the config the kernel runs as written (an autotuned one's pick is not known here)
        launched = space.key(_launch_values(base)) if tuner is None else None
        for i, values in enumerate(todo):
            row = _row(shape, values)
            row["launched"] = row["label"] == launched
            try:
                launch = config_launch(base, values, hook)
                row["programs"] = launch.programs()
                cubin = folder / f"{i}_{base.name}.cubin"
                futures[self.pool.submit(launch, self.arch, cubin)] = row
            except Exception as exc:  # noqa: BLE001 - a config that cannot even bind is a row
                row.update(status="failed", problem=problem_from_exception(exc).to_dict())
                self._add(row)
        return futures

    def _compiled(self, future: Future) -> dict:
        out = future.result()
        if out["problem"]:
            return {"status": "failed", "problem": out["problem"], "compile_s": out["compile_s"]}
        space_name = self.params.get("space") or "own"
        reason = analysis.prune_reason(out["resources"], drop_spills=space_name == "auto")
        return {
            "status": "pruned" if reason else analysis.TIMED,
            "reason": reason,
            "compile_s": out["compile_s"],
            "hash": out["hash"],
            "resources": out["resources"],
        }

    def _search(
        self,
        shape: Shape,
        configs: list[Values],
        futures: dict,
        bench: dict,
        target: Any,
        tuner: Any,
    ) -> None:
        """Time only the configs the search strategy asks for. Compiles are whole-space: the
        static start and the rows left untimed need every config's facts. Coordinate descent
        beyond the kernel's own configs starts from Triton's pick, so Triton's autotuner runs
        first there. Rows of an earlier run (--resume) answer what they timed, so a resumed
        search retraces its steps."""
        text = shape_text(shape)
        for future in as_completed(futures):
            futures[future].update(self._compiled(future))
        fresh = {r["label"]: r for r in futures.values()}
        rows = []
        for values in configs:
            row = fresh.get(space.key(values)) or self.done.get((text, space.key(values)))
            if row and row.get("resources") and row["status"] != "pruned":
                rows.append(row)
        space_labels = {r["label"] for r in rows}
        for row in fresh.values():
            if row["label"] not in space_labels:  # failed to compile, or pruned
                self._add(row)
        name = self.strategy
        budget = Budget(**self.params["budget"]) if self.params.get("budget") else None
        budget = budget or strategy.default_budget(name, len(rows))
        start = None
        if name == "coordinate" and rows:
            if tuner is not None and strategy.starts_from_triton(self.params.get("space")):
                # its start: Triton's pick, timed first (so in sweep_s too)
                started = time.perf_counter()
                self._triton(text, tuner, bench)
                self._add_time("triton_s", time.perf_counter() - started)
            pick = (self.result.triton.get(text) or {}).get("label")
            start = strategy.static_start(rows, pick)
        by_label = {r["label"]: r for r in rows}
        listed = {r["label"] for r in rows if r["label"] not in fresh}  # rows of the earlier run
        count = 0

        def evaluate(values: Values, samples: int | None) -> dict:
            nonlocal count
            row = by_label[space.key(values)]
            count += 1
            known = _recorded(row, samples)
            if known is not None:
                return known
            row.setdefault("chosen_by", name)
            row.setdefault("order", count)
            checked = row.get("check") is not None
            started = time.perf_counter()
            self._time_row(row, bench, target, samples)
            self._add_time("timing_s", time.perf_counter() - started)
            if samples is not None or "rounds" in row:  # successive halving's rounds
                kept = ("samples", "ms", "p20", "p80", "timing_s")
                row.setdefault("rounds", []).append({k: row.get(k) for k in kept})
            if row["label"] in listed:
                self._save()
            else:
                listed.add(row["label"])
                self._add(row)
            self._emit_progress(count, budget.evaluations or len(rows), row["label"])
            return {**row, "check_s": 0.0 if checked else row.get("check_s")}

        seed = int(self.params.get("seed") or 0)
        found = strategy.Space([r["values"] for r in rows])
        trace = strategy.search(name, found, evaluate, budget, seed, start and start[0])
        for row in rows:
            if row["label"] not in listed:
                row.update(status="skipped", reason=f"{name} chose others ({budget.text()})")
                self._add(row)
        recorded = self.result.strategy or {"name": name, "budget": budget.to_dict(), "seed": seed}
        recorded.setdefault("shapes", {})[text] = {
            "configs": len(rows),
            "start": {"label": start[0], "from": start[1]} if start else None,
            **trace.summary(),
        }
        self.result.strategy = recorded
        self._save()

    def _bench_setup(self, shape: Shape) -> dict:
        from workbench.check import exact
        from workbench.runtime import tensors

        tdtype = tensors.torch_dtype(self.dtype) if self.dtype else None
        inputs = tuple(self.spec.make_inputs(shape, tdtype, self.ctx.device))
        wider = exact.run(self.spec.reference_fn, inputs)
        ref = tensors.outputs(self.spec.reference_fn(*inputs))
        return {"inputs": inputs, "ref": ref, "wider": wider, "best": None, "shape": shape}

    def _time_row(self, row: dict, bench: dict, target: Any, samples: int | None = None) -> None:
        """Check the config's output against the reference (once), then time it (`samples`: a
        light timing of that many); failures are rows. The seconds each part took are kept."""
        import torch

        from workbench.check.compare import compare
        from workbench.check.result import CaseResult
        from workbench.runtime import tensors
        from workbench.sweep.timing import adaptive_ms

        self._running(row)
        call = lambda: self.spec.kernel_fn(*bench["inputs"])  # noqa: E731
        started, part = time.perf_counter(), "check_s"
        try:
            with compat.pinned(target, *split_options(row["values"])):
                if row.get("check") is None:
                    with tensors.poisoned_allocations():
                        out = tensors.outputs(call())
                    torch.cuda.synchronize()
                    case = CaseResult("sweep", row["shape"], self.dtype or "as given", "contiguous")
                    compare(self.spec, case, out, bench["ref"], self.dtype, bench["wider"])
                    row["check"] = {k: getattr(case, k) for k in ("max_abs_diff", "rel_l2", "bad")}
                    row["check_s"] = round(time.perf_counter() - started, 4)
                    if case.status != "passed":
                        row.update(status="wrong", reason=f"wrong result: {case.reason}")
                        row["timing_s"] = 0.0
                        return
                started, part = time.perf_counter(), "timing_s"
                best = bench["best"]
                with gpu_lock.alone(self.ctx.device):
                    row.update(adaptive_ms(call, best, samples))
                row["timing_s"] = round(time.perf_counter() - started, 4)
                if samples is None:  # a light timing is too rough to stop others early
                    bench["best"] = row["ms"] if best is None else min(best, row["ms"])
        except Exception as exc:  # noqa: BLE001 - a failing config is a row; the next one runs
            row[part] = round(time.perf_counter() - started, 4)
            problem = (
                exc.problem if isinstance(exc, WorkbenchError) else problem_from_exception(exc)
            )
            row.update(status="failed", problem=problem.to_dict())
            if problem.kind == "cuda-error":  # the context is gone: end here, --resume goes on
                self._running(None)
                self._add(row)
                raise WorkbenchError(Problem(**problem.to_dict())) from exc
        finally:
            self._running(None)

    def _triton(self, text: str, tuner: Any, bench: dict) -> None:
        from workbench.sweep.timing import persisted, triton_pick

        try:
            pick = triton_pick(tuner, lambda: self.spec.kernel_fn(*bench["inputs"]))
        except Exception as exc:  # noqa: BLE001 - the comparison is optional; say why it is missing
            pick = {"label": None, "problem": problem_from_exception(exc).to_dict()}
        self.result.triton[text] = pick
        self.result.persisted[text] = persisted(tuner)
        self._save()

    def _add(self, row: dict) -> None:
        with self.lock:
            self.result.rows.append(row)
        self._save()  # on disk before anyone is told: a cancel right after the event keeps it
        self.ctx.emit({"event": "config", "row": row})

    def _add_time(self, name: str, seconds: float) -> None:
        timings = self.result.timings
        timings[name] = round(timings.get(name, 0.0) + seconds, 3)

    def _running(self, row: dict | None) -> None:
        with self.lock:
            self.current = (time.monotonic(), row) if row else None
            self.result.running = {k: row[k] for k in ("shape", "label", "values")} if row else None
        self._save()

    def _save(self) -> None:
        with self.lock:
            text = json.dumps(self.result.record(), default=str)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(self.file)  # a killed process leaves the last whole file

    def _emit_progress(self, done: int, total: int, case: str) -> None:
        self.ctx.emit({"event": "progress", "done": done, "total": total, "case": case})

    def _watch(self) -> None:
        """End the process (and its compile workers) when one config overruns: a hung kernel
        cannot be interrupted; the running config stays named in sweep.json for --resume."""
        limit = float(self.params.get("config_timeout") or CONFIG_TIMEOUT)
        while True:
            time.sleep(0.5)
            current = self.current
            if current and time.monotonic() - current[0] > limit:
                self.ctx.emit({"event": "config-timeout", "label": current[1]["label"]})
                for child in multiprocessing.active_children():
                    child.kill()
                os._exit(124)


def _recorded(row: dict, samples: int | None) -> dict | None:
    """The row's answer to a timing at `samples` (None: the full one) when it already holds it
    (this run's or the resumed run's): a failure, a timing of that many samples, or a full
    timing, which answers a light one too; else None."""
    if row["status"] in analysis.FAILED:
        return {**row, "check_s": 0.0, "timing_s": 0.0}
    if row["status"] != analysis.TIMED or row["ms"] is None:
        return None
    done = [r for r in row.get("rounds", []) if r["samples"] == samples]
    if done:
        return {**row, **done[0], "check_s": 0.0}
    return {**row, "check_s": 0.0} if row.get("stop") != "light" else None


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


def _tuner_prunes(tuner: Any, base: Launch, configs: list[Values]) -> tuple[dict[str, str], str]:
    """(label -> why, note): the configs the kernel's own `prune_configs_by` (early_config_prune,
    perf_model with top_k) drops for these arguments, since Triton would never run them here;
    the note says when the hook could not run (one that needs a GPU, say) and all were kept."""
    if tuner is None or not (tuner.early_config_prune or tuner.perf_model):
        return {}, ""
    names = list(tuner.arg_names)
    nargs = {
        **dict(zip(names, base.args)),
        **{k: base.kwargs[k] for k in names if k in base.kwargs},
    }
    saved = getattr(tuner, "nargs", None)
    tuner.nargs = nargs  # what Autotuner.run sets before it prunes
    try:
        kept = {space.key(_values_of(c)) for c in tuner.prune_configs({})}
    except Exception as exc:  # noqa: BLE001 - the hook failed here: sweep every config
        return {}, f"prune_configs_by raised {type(exc).__name__}: {exc}; every config swept"
    finally:
        tuner.nargs = saved
    why = "dropped by the kernel's prune_configs_by for these arguments"
    return {space.key(v): why for v in configs if space.key(v) not in kept}, ""


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


def _row(shape: Shape, values: Values) -> dict:
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


def _previous(path: str | None) -> dict[tuple[str, str], dict]:
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


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name()
