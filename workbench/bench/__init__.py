"""Benchmarking: the bench job (child, GPU), its arithmetic, typed records, the campaign and report.

May import check, run, catalog and runtime; torch only in the job and ceilings (child side).
"""
