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


_SPREAD = """
from workbench.catalog.spec import KernelSpec

SHAPES = {"regular": [(8,)], "bench": [(1 << 20,)]}
_TWINS = {"shapes": SHAPES, "dtypes": ("float16",), "description": "shared"}
_FLAWED = {**_TWINS, "kind": "layer"}

FLAWED = KernelSpec(name="flawed", **_FLAWED)
FIXED = KernelSpec(name="fixed", **_TWINS)
OPAQUE = KernelSpec(name="opaque", **dict(shapes=SHAPES))
"""


def test_spec_fields_spread_from_a_module_level_dict(tmp_path):
    (tmp_path / "spread.py").write_text(textwrap.dedent(_SPREAD))
    catalog = discover([str(tmp_path)])
    flawed, fixed = catalog.find("flawed"), catalog.find("fixed")
    assert flawed.shapes == fixed.shapes == {"regular": [[8]], "bench": [[1 << 20]]}
    assert flawed.dtypes == fixed.dtypes == ("float16",)
    assert flawed.description == fixed.description == "shared"
    assert (flawed.kind, fixed.kind) == ("layer", "kernel")
    # a spread of anything but a dict display says nothing: the fields read as not literal
    opaque = catalog.find("opaque")
    assert opaque.shapes is None and opaque.dtypes is None


def test_a_second_discovery_reads_unchanged_files_from_the_scan_cache(tmp_path, monkeypatch):
    import ast

    module = tmp_path / "shared.py"
    module.write_text(textwrap.dedent(_MODULE))
    (tmp_path / "broken.py").write_text("import no_such_package_here\nkernel_fn = 1\n")
    first = discover([str(tmp_path)])
    assert [p.kind for p in first.problems] == ["missing-package"]

    def no_parse(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("parsed again")

    with monkeypatch.context() as m:
        m.setattr(ast, "parse", no_parse)
        (tmp_path / "broken.py").unlink()  # (a module with a problem is never cached)
        again = discover([str(tmp_path)])
    assert again.kernels == first.kernels and not again.problems
    module.write_text(textwrap.dedent(_MODULE).replace('"shared_a"', '"renamed_a"'))
    edited = discover([str(tmp_path)])
    assert [k.name for k in edited.kernels] == ["renamed_a", "shared_b"]
    (tmp_path / "scan.json").write_text("{not json")  # a damaged cache is read as none
    assert discover([str(tmp_path)]).kernels == edited.kernels


_DOCUMENTED = '''
"""Doubles a vector: the module's own summary."""

from workbench.catalog.spec import KernelSpec


def double(x):
    """x doubled, in one pass.

    The rest of the docstring is for the reader of the code.
    """
    return x * 2


def triple(x):
    """x tripled."""
    return x * 3


DOUBLE = KernelSpec(
    name="double", kernel_fn=double, reference_fn=double, make_inputs=None, shapes={}
)
TRIPLE = KernelSpec(
    name="triple",
    kernel_fn=triple,
    reference_fn=triple,
    make_inputs=None,
    shapes={},
    dtypes=("float16",),
    description="said here",
)
'''


def test_kernel_fn_docstring_is_the_description_unless_the_spec_gives_one(tmp_path):
    from workbench.catalog.loader import import_module, module_specs
    from workbench.catalog.spec import DTYPES

    (tmp_path / "documented.py").write_text(_DOCUMENTED)
    catalog = discover([str(tmp_path)])
    double, triple = catalog.find("double"), catalog.find("triple")
    assert double.description == "x doubled, in one pass"
    assert triple.description == "said here"
    # no dtypes in the source: the spec's default, as the loaded spec has
    assert double.dtypes == DTYPES and triple.dtypes == ("float16",)
    # the loaded specs say the same as the source
    loaded = {s.name: s for s in module_specs(import_module(str(tmp_path / "documented.py")))}
    assert loaded["double"].description == double.description
    assert loaded["double"].dtypes == double.dtypes
    assert loaded["triple"].description == "said here"


def test_a_three_name_module_is_described_by_its_docstring(tmp_path):
    from workbench.catalog.loader import import_module, module_specs

    module = tmp_path / "three.py"
    module.write_text(
        '"""Scales a vector by two.\n\nMore."""\n'
        "def kernel_fn(x):\n    return x\n\n"
        "def reference_fn(x):\n    return x\n\n"
        "def get_inputs():\n    return []\n"
    )
    entry = discover([str(module)]).find("three")
    assert entry.contract == "three-name"
    assert entry.description == "Scales a vector by two"
    assert module_specs(import_module(str(module)))[0].description == entry.description
