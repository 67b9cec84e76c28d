"""Run a sweep's workers on a Ray cluster (an optional extra: pip install -e '.[ray]').

One actor per GPU (num_gpus=1: Ray sets its CUDA_VISIBLE_DEVICES), or one per host on a cluster
without GPUs (the static sweep, compiled for --arch), each the same worker as a "sweep-worker"
child of `spread`, pulling from the same work queue: its messages go in by `give`, its events
stream back from `run`. Every host compiles into its own Triton cache and needs the workbench
installed and the kernel's file at the same path (a shared file system, or the same checkout).
An actor that dies is started again, and what it held goes back on the queue.
"""

from __future__ import annotations

import os
import queue
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from types import ModuleType

from workbench.catalog.discovery import KernelEntry
from workbench.run import jobs, kinds, store
from workbench.run.faults import timeout_problem
from workbench.run.params import SweepParams
from workbench.runtime.errors import Problem, fail
from workbench.sweep.result import SweepResult
from workbench.sweep.spread import Runner, Start

LOCAL = "local"
"""--cluster local: a cluster of this host alone, started for the sweep and stopped after it."""
REMEDY = "pip install -e '.[ray]' here and on every host of the cluster"


def run_sweep(
    entry: KernelEntry,
    params: SweepParams,
    address: str,
    on_event: Callable[[dict], None] | None = None,
    cancel: threading.Event | None = None,
    timeout: float = 3600.0,
) -> tuple[SweepResult | None, list[jobs.Outcome]]:
    """(the sweep's result or None, the outcomes of its actors and, last, its own)."""
    ray = _ray()
    _connect(ray, address)
    try:
        runner = Runner(entry, params, on_event, cancel, timeout)
        return runner.run(_slots(ray, entry, params, runner, timeout))
    finally:
        ray.shutdown()


class SweepActor:
    """A sweep worker in a Ray actor: the "sweep-worker" job child, started here as `spread`
    starts it (its own process, session and lifeline), so it runs as on the native path, apart
    from the actor's threads and the environment Ray gives actors (OMP_NUM_THREADS=1)."""

    def __init__(self) -> None:
        self.feed = jobs.Feed()

    def give(self, message: dict) -> None:
        """A message of the queue's, once the child spoke (it says `ready` before any comes)."""
        self.feed.send(message)

    def run(
        self, file: str, kernel: str, params: dict, env: dict[str, str | None], timeout: float
    ) -> Iterator[list[dict]]:
        """The job's events, in batches: all that came since the last one was taken."""
        if not os.path.isfile(file):
            problem = Problem(
                "no-kernel-file",
                f"{file} is not on {socket.gethostname()}",
                "put the kernel's file at the same path on every host of the cluster (a shared "
                "file system, or the same checkout)",
                source="environment",
            )
            yield [{"event": "error", "problem": problem.to_dict()}]
            return
        for name, value in env.items():  # the driver's, where Ray's own would differ
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        # the child's run folder and log stay on this host, apart from any store of its
        os.environ["WORKBENCH_REPORTS"] = tempfile.mkdtemp(prefix="workbench-sweep-")
        entry = KernelEntry(name=kernel, file=file, line=0)
        job = jobs.Job("sweep-worker", entry, kinds.job_params("sweep-worker", params), timeout)
        events: queue.Queue[dict | None] = queue.Queue()

        said: set[str] = set()

        def event(e: dict) -> None:
            said.add(e["event"])
            events.put(e)

        def body() -> None:
            outcome = jobs.run_job(job, event, feed=self.feed)
            if outcome.status != "ok" and "error" not in said and outcome.problem:
                events.put({"event": "error", "problem": outcome.problem.to_dict()})  # a crash
            events.put(None)

        threading.Thread(target=body, name="sweep-worker", daemon=True).start()
        while True:
            batch = [events.get()]
            while not events.empty():
                batch.append(events.get())
            done = [e for e in batch if e is not None]
            if done:
                yield done
            if None in batch:
                return


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise fail(
            "no-ray",
            "--cluster runs the sweep's workers on Ray, which is not installed here",
            REMEDY,
            source="environment",
        ) from exc
    return ray


def _connect(ray: ModuleType, address: str) -> None:
    path = os.pathsep.join(p for p in (jobs.ROOT, os.environ.get("PYTHONPATH")) if p)
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},  # the actors import this workbench
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise fail(
            "no-cluster",
            f"cannot reach a Ray cluster at {address!r}: {exc}",
            "start one (`ray start --head`, then --cluster auto), name its address "
            f"(--cluster HOST:PORT), or use --cluster {LOCAL} for this host alone",
            source="environment",
        ) from exc


def _slots(
    ray: ModuleType, entry: KernelEntry, params: SweepParams, runner: Runner, timeout: float
) -> dict[str, Start]:
    """A worker per GPU of the cluster, or per host when it has none."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    has_gpus = any(n["Resources"].get("GPU") for n in nodes)
    slots: dict[str, Start] = {}
    # the driver's own OMP_NUM_THREADS (or none) for the workers: Ray sets 1 in its actors
    driver = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    for node in nodes:
        res, host = node["Resources"], node["NodeManagerAddress"]
        gpus = int(res.get("GPU", 0))
        cores = max(1, int(res.get("CPU", 1)))
        if has_gpus:
            share = replace(params, jobs=params.jobs or max(1, cores // max(1, gpus)))
            for i in range(gpus):
                slots[f"{host}/gpu{i}"] = _start(
                    ray, node, 1, entry, share, driver, runner, timeout
                )
        else:
            share = replace(params, jobs=params.jobs or cores)
            env = {**driver, "WORKBENCH_DEVICE": "cpu"}  # no device here: the interpreter
            slots[host] = _start(ray, node, 0, entry, share, env, runner, timeout)
    if not slots:
        raise fail("no-cluster", "the Ray cluster has no live node", "start one: ray start --head")
    return slots


def _start(
    ray: ModuleType,
    node: dict,
    gpus: int,
    entry: KernelEntry,
    params: SweepParams,
    env: dict[str, str | None],
    runner: Runner,
    timeout: float,
) -> Start:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor_class = ray.remote(SweepActor)

    def run(name: str, stop: threading.Event) -> jobs.Outcome:
        actor = actor_class.options(
            num_gpus=gpus,
            num_cpus=0,  # its compile pool takes the host's cores outside Ray's count
            max_concurrency=2,  # `give` while `run` streams
            max_restarts=0,  # the runner starts another, and requeues what this one held
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
        ).remote()
        runner.link(name, lambda message: actor.give.remote(message))
        job = jobs.Job("sweep-worker", entry, params, timeout)
        outcome = jobs.Outcome(job, store.new_run_id(), f"ray:{node['NodeManagerAddress']}")
        try:
            _follow(
                ray,
                actor.run.remote(entry.file, entry.name, params.to_dict(), env, timeout),
                name,
                outcome,
                stop,
            )
        finally:
            ray.kill(actor, no_restart=True)
        return outcome

    def _follow(
        ray: ModuleType, stream: object, name: str, outcome: jobs.Outcome, stop: threading.Event
    ) -> None:
        start = time.monotonic()
        while True:
            if stop.is_set():
                outcome.status = "cancelled"
                outcome.problem = Problem("cancelled", "the job was cancelled", "run it again")
                return
            if time.monotonic() - start > timeout:
                outcome.status, outcome.problem = "timeout", timeout_problem(timeout)
                return
            ready, _ = ray.wait([stream], timeout=0.2)
            if not ready:
                continue
            try:
                batch = ray.get(next(stream))  # type: ignore[call-overload]
            except StopIteration:
                break
            except ray.exceptions.RayError as exc:
                outcome.status = "crash"
                outcome.problem = Problem(
                    "worker-died",
                    f"the Ray actor {name} died: {str(exc).splitlines()[0]}",
                    "its configs went to the other workers; the Ray logs of that host say why",
                )
                return
            for event in batch:
                if event.get("event") == "result":
                    outcome.result = event.get("result")
                elif event.get("event") == "error":
                    outcome.status, outcome.problem = "error", Problem(**event["problem"])
                runner.event(name, event)
        if outcome.status == "ok" and outcome.result is None:
            outcome.status = "crash"
            outcome.problem = Problem("worker-died", f"{name} ended without a result", "")

    return run
