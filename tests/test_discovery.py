"""Discovery reads a spec's fields from the source, named module-level constants included."""

from __future__ import annotations

import textwrap

from workbench.catalog.discovery import discover

_MODULE = """
from workbench.catalog.spec import KernelSpec

CHECK = {"regular": [(64, 64)], "irregular": [(3, 1 << 4)]}
DTYPES = ("float32", "float16")
NAME = "shared_b"
ONCE_TWICE = ("float32",)
ONCE_TWICE = ("float16",)

A = KernelSpec(name="shared_a", shapes={**CHECK, "bench": [(4096, 4096)]}, dtypes=DTYPES)
B = KernelSpec(name=NAME, shapes=CHECK, dtypes=ONCE_TWICE)


def _inside():
    DTYPES = ("bfloat16",)
    return DTYPES
"""


def test_specs_share_named_module_constants(tmp_path):
    (tmp_path / "shared.py").write_text(textwrap.dedent(_MODULE))
    catalog = discover([str(tmp_path)])
    assert not catalog.problems
    a, b = catalog.find("shared_a"), catalog.find("shared_b")
    assert a.shapes == {"regular": [[64, 64]], "irregular": [[3, 16]], "bench": [[4096, 4096]]}
    assert a.dtypes == ("float32", "float16")
    assert b.shapes == {"regular": [[64, 64]], "irregular": [[3, 16]]}
    # a name bound twice at module level has no one value: the source does not say
    assert b.dtypes is None
