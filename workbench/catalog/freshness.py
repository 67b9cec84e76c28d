"""Whether a result on screen is older than the source it came from (pure)."""

from __future__ import annotations

import os


def changed_since(file: str, timestamp: float) -> bool:
    """True when `file` was modified after `timestamp` (a result's start time, epoch seconds),
    or is gone: the result on screen no longer describes the code on disk."""
    try:
        return os.stat(file).st_mtime > timestamp
    except OSError:
        return True
