"""A timing whose samples spread too widely to trust its median is said so, in the bench's
report, its CLI table and the TUI's Bench tab. The fixture is a real H100 run of `bench
softmax` where one case's samples spread over 38 % of its median (its p20 matched the run
before; its median did not) and the other eight stayed within 4 %."""

from __future__ import annotations

import json

from conftest import FIXTURES

from workbench.bench import report as benchreport
from workbench.bench.result import BenchRecord
from workbench.bench.timing_rules import UNSTEADY, unsteady
from workbench.views import bench as bench_view

RUN = json.loads((FIXTURES / "softmax_unsteady_h100.json").read_text())


def test_only_the_case_whose_samples_spread_is_called_unsteady():
    records = [BenchRecord.from_dict(r) for r in RUN["records"]]
    lines = [line for r in records if (line := bench_view.unsteady_line(r))]
    assert lines == [
        "32768x1024 bfloat16: unsteady timing: p20 0.04986 ms, p80 0.07174 ms (38% of the median "
        "apart): another process on the GPU, or a clock change, moved it; time it again"
    ]
    notes = [n for n in benchreport.markdown(RUN).splitlines() if "unsteady" in n]
    assert notes == ["- softmax 32768x1024 bfloat16: " + lines[0].split(": ", 1)[1]]


def test_the_edge_and_a_timing_without_quantiles():
    assert unsteady(1.0, 1.0, 1.0 + UNSTEADY) is None
    assert unsteady(1.0, 1.0, 1.01 + UNSTEADY) is not None
    assert unsteady(1.0, None, None) is None and unsteady(None, 0.5, 2.0) is None
