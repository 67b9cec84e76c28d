"""Running a job: the child process (worker), the parent-side runner, faults, the store.

May import catalog and runtime; the stages plug into the worker by name, never imported here.
"""
