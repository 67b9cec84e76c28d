"""Load a FlagGems op module from the installed `flag-gems` package, unchanged.

`import flag_gems` looks for an accelerator vendor at import time and fails on a machine
without one (and its runtime needs sqlalchemy), so the op files that import nothing from
flag_gems are loaded by path from the installed package instead: the same source, no
package initialisation.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def flag_gems_op(name: str) -> ModuleType:
    """flag_gems/ops/<name>.py of the installed flag-gems, as module `flag_gems_ops_<name>`."""
    found = importlib.util.find_spec("flag_gems")  # finds the package without running it
    if found is None or not found.submodule_search_locations:
        raise ModuleNotFoundError("flag-gems is not installed", name="flag_gems")
    path = Path(found.submodule_search_locations[0]) / "ops" / f"{name}.py"
    module_name = f"flag_gems_ops_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
