"""The autotune sweep: every config of a kernel compiled in parallel, checked, timed, explained.

space (which configs), analysis (ranking, explanations, the minimal set, merging; pure),
buckets (which shapes can share an autotune key bucket; pure), strategy (which configs to time
when not all: exhaustive, random, coordinate descent, successive halving; pure), replay
(strategies against a recorded sweep; pure), plot (terminal bars and PNG), pool (parallel
compiles and their static resources, child side), timing (pinning one config, adaptive timing,
Triton's own pick; GPU), job (the worker's "sweep" job), spread (one job per GPU, merged; parent
side).
"""
