"""The kernels the app lists, found as `workbench list` finds them (`catalog.discovery`)."""

from __future__ import annotations

import gc
from collections.abc import Sequence

from workbench.catalog.discovery import Catalog, discover


def find_kernels(paths: Sequence[str]) -> Catalog:
    """`discover`, with the cycle collector paused: parsing every kernel file makes objects
    fast enough to set off full collections, each walking all that the UI has imported, and
    syntax trees hold no cycles for it to find (a third of the list's time to first paint)."""
    gc.disable()
    try:
        return discover(paths)
    finally:
        gc.enable()
