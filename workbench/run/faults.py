"""Turn what went wrong in a job (an exception in the child, or its death) into a Problem."""

from __future__ import annotations

import signal
import traceback
from pathlib import Path

from workbench.runtime.errors import Problem

_PACKAGE = str(Path(__file__).resolve().parents[1])


def problem_from_exception(exc: BaseException) -> Problem:
    name = type(exc).__name__
    text = str(exc).strip()
    first = text.splitlines()[0] if text else name
    file, line = _user_frame(exc)
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-6000:]
    if "CUDA error" in text or "illegal memory access" in text or name == "AcceleratorError":
        return Problem(
            "cuda-error",
            f"CUDA fault: {first}",
            "an out-of-bounds access is the usual cause: check masks and strides; rerun with "
            "CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer to find the access",
            file,
            line,
            detail,
        )
    if name == "OutOfResources":
        return Problem(
            "out-of-resources",
            f"the compiled kernel needs more than the GPU has: {first}",
            "lower BLOCK sizes or num_stages for this config (see `workbench resources`)",
            file,
            line,
            detail,
        )
    if name in ("CompilationError", "CompileTimeAssertionFailure", "PTXASError", "MLIRError"):
        return Problem(
            "compile-error",
            f"Triton could not compile the kernel: {_compile_message(text)}",
            "fix the kernel source at the line shown",
            file,
            line,
            detail,
        )
    if name == "InterpreterError":  # the interpreter's face of a front-end (compile) error
        return Problem(
            "compile-error",
            f"Triton rejected the kernel (interpreter): {first}",
            "fix the kernel source at the line shown",
            file,
            line,
            detail,
        )
    return Problem(
        "exception",
        f"{name}: {first}",
        "fix the code at the line shown (the traceback is in the detail)",
        file,
        line,
        detail,
    )


def _compile_message(text: str) -> str:
    """Triton's message opens with "at LINE:COL:" and the offending source; keep both and the
    error itself (the last line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[:2] + lines[-1:]) if len(lines) > 3 else " | ".join(lines)


def _user_frame(exc: BaseException) -> tuple[str | None, int | None]:
    """The innermost frame outside the workbench and the installed packages, looking first in the
    exception that started it all (the interpreter wraps the kernel's own error)."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    for e in reversed(chain):
        found: tuple[str | None, int | None] = (None, None)
        for frame, lineno in traceback.walk_tb(e.__traceback__):
            path = frame.f_code.co_filename
            if path.startswith(_PACKAGE) or "site-packages" in path or path.startswith("<"):
                continue
            found = (path, lineno)
        if found[0]:
            return found
    return None, None


def problem_from_exit(returncode: int, stderr_tail: str) -> Problem:
    """The child died without reporting: a signal or an exit status, and what it last printed."""
    if returncode < 0:
        sig = -returncode
        sig_name = signal.Signals(sig).name if sig in signal.Signals.__members__.values() else sig
        kind = {signal.SIGSEGV: "segfault", signal.SIGABRT: "abort"}.get(sig, "killed")
        cause = f"the kernel's process died of {sig_name}"
        remedy = {
            "segfault": "a segfault in the child is usually an out-of-bounds access in "
            "interpreter mode or a driver/compiler crash: check masks, rerun alone",
            "abort": "something called abort(): read the log tail for the assertion or "
            "CUDA error that preceded it",
        }.get(kind, "it was killed from outside (out of memory?); read the log tail")
    else:
        kind = "crash"
        cause = f"the kernel's process exited with status {returncode} without a result"
        remedy = "read the log tail; a CUDA fault or sys.exit in user code are the usual causes"
    if "illegal memory access" in stderr_tail or "CUDA error" in stderr_tail:
        kind, remedy = "cuda-error", "check masks and strides; rerun with CUDA_LAUNCH_BLOCKING=1"
    return Problem(kind, cause, remedy, detail=stderr_tail[-4000:])


def timeout_problem(seconds: float) -> Problem:
    return Problem(
        "timeout",
        f"the job ran past its {seconds:g} s timeout and was killed (a hang, or too much work)",
        "look for a loop that never ends or a deadlock on a barrier; in interpreter mode use "
        "smaller shapes; raise the limit with --timeout",
    )
