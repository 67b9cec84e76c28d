"""The autotune sweep: every config of a kernel compiled in parallel, checked, timed, explained.

space (which configs), analysis (ranking, explanations, the minimal set; pure), buckets (which
shapes can share an autotune key bucket; pure), strategy (which configs to time when not all:
exhaustive, random, coordinate descent, successive halving; pure), replay (strategies against a
recorded sweep; pure), queue (the work queue over workers: hand-out, blame, rows in plan order;
pure), plot (terminal bars and PNG), pool (parallel compiles and their static resources, child
side), tuner (Triton's own autotuner: its pick, its persisted entries; GPU), job (the worker loop:
the "sweep-worker" job, and the "sweep" job that is its own queue), spread (a worker process per
GPU on this host; parent side), cluster (a Ray actor per GPU of a cluster; parent side).
"""
