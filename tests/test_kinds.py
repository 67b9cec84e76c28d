"""The registry of kinds and commands (`run.kinds`): every name it declares resolves, every tab,
store kind and report part maps through it, and a result or parameters of the wrong shape
crossing the process boundary is a typed error."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, cpu_env

from workbench.app.actions import RUNNERS
from workbench.catalog.discovery import discover
from workbench.cli.history import KINDS as HISTORY_KINDS
from workbench.report.sections import PARTS
from workbench.run import jobs, kinds, machine, store
from workbench.run.params import CheckParams, IrParams
from workbench.tui.tabs import TABS


@pytest.mark.parametrize("kind", kinds.JOBS)
def test_every_job_kind_names_a_worker_entry_and_a_result_that_import(kind):
    """The worker loads these by name, out of the contracts' sight: each must resolve to a
    function of (spec, params, ctx), and its result to a class that reads its JSON back."""
    k = kinds.KINDS[kind]
    entry = kinds.resolve(k.entry or "")
    assert list(inspect.signature(entry).parameters) == ["spec", "params", "ctx"]
    assert k.params is not None and k.params().to_dict() is not None  # every field defaulted
    if k.result:
        assert callable(kinds.resolve(k.result).from_dict)


def test_the_worker_takes_exactly_the_job_kinds():
    out = subprocess.run(
        [sys.executable, "-m", "workbench.run.worker", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    assert "{" + ",".join(sorted(kinds.JOBS)) + "}" in out


def test_every_tab_store_kind_and_report_part_maps_through_the_registry():
    tab_ids = {t.id for t in TABS}
    for c in kinds.COMMANDS.values():
        assert set(c.tabs) <= tab_ids, c.name
        assert set(c.runs) <= set(kinds.KINDS), c.name
        assert kinds.for_tab(c.tabs[0]) is c  # its key starts it
    assert {t.id for t in TABS if t.action is None} == {"history"}
    assert set(RUNNERS) == set(kinds.COMMANDS)
    assert set(PARTS) <= tab_ids
    assert HISTORY_KINDS["resources"] == ("ir",) and HISTORY_KINDS["profile"] == kinds.PROFILE_KINDS
    assert HISTORY_KINDS["diagnose"] == ("diagnose", "diagnose-try")
    assert kinds.for_tab("diagnosis").name == "diagnose"  # the tab and the command differ in name


def test_list_names_every_command_of_the_registry(monkeypatch):
    """What `list` says runs here (or needs a GPU) follows the registry: a command added there
    is named without a second table."""
    for name, gpu_only in (("anywhere", False), ("gpu-only", True)):
        added = kinds.Command(name, name, "steps", ("check",), (), gpu_only=gpu_only)
        monkeypatch.setitem(kinds.COMMANDS, name, added)
    monkeypatch.setenv("WORKBENCH_DEVICE", "cpu")
    here = machine.actions()
    assert {c.name: not c.gpu_only for c in kinds.COMMANDS.values()}.items() <= here.items()
    assert here["anywhere"] and not here["gpu-only"]


def test_a_result_of_the_wrong_shape_from_a_child_is_a_typed_error(tmp_path, monkeypatch):
    """A child (here a real process standing in for the job) that answers an ir job with a
    result that is not an IrResult: the job ends as an error naming the cause and the remedy,
    the JSON kept in its detail, not as a KeyError wherever the result is read next."""
    for k, v in cpu_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    entry = discover([str(ROOT / "kernels")]).find("vector_add")
    said = json.dumps({"event": "result", "result": {"kernel": "vector_add", "reachable": 1}})
    wrap = ["sh", "-c", f"echo '{said}'", "sh"]  # the job's command line lands in $1...: unused
    outcome = jobs.run_job(jobs.Job("ir", entry, IrParams(), 60), wrap=wrap)
    assert outcome.status == "error" and outcome.result is None
    problem = outcome.problem
    assert problem is not None and problem.kind == "wrong-result"
    assert "IrResult" in problem.cause and problem.remedy and "reachable" in problem.detail
    kept = store.Store().history("vector_add", "ir", limit=1)[0]
    assert kept.id == outcome.run_id and (kept.problem or {})["kind"] == "wrong-result"


def test_parameters_of_the_wrong_shape_are_refused_by_the_child(tmp_path):
    """A key the kind's parameters do not have is an error event with a cause, not a job run
    with it silently dropped."""
    cmd = [sys.executable, "-m", "workbench.run.worker", "check", "--params", '{"dtype": "x"}']
    env = {**os.environ, **cpu_env(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 1 and events[-1]["event"] == "error"
    problem = events[-1]["problem"]
    assert problem["kind"] == "bad-params" and "dtype" in problem["cause"] and problem["remedy"]


def test_parameters_cross_as_json_and_read_back_equal():
    params = CheckParams(["float16"], ["regular"], seed=3)
    assert kinds.job_params("check", json.loads(json.dumps(params.to_dict()))) == params
