"""The autotune and cache doctor: scan Triton's compile and autotune caches, recompute keys,
find stale entries with their evidence, clear exactly them.

`scan`, `static`, `findings` and `clear` are pure (no torch or triton, safe in the UI
process); `keys` holds the key recipes per Triton version; `live` (the installed Triton's key
components) and `job` are the child-process side.
"""
