"""Differences between Triton versions and modes, in one place."""

from __future__ import annotations
