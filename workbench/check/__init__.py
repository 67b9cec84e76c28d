"""Correctness: the check job (child), the float64 comparison, and the typed check report.

May import run, catalog and runtime; torch only in the job and the comparison (child side).
"""
