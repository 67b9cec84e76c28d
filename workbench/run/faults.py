"""Turn what went wrong in a job (an exception in the child, or its death) into a Problem."""

from __future__ import annotations

import inspect
import os
import signal
import sysconfig
import traceback
from pathlib import Path

from workbench.runtime.errors import Problem

_PACKAGE = str(Path(__file__).resolve().parents[1])
_NOT_USER = (_PACKAGE, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"])
"""Frames under these are the workbench's, Python's or an installed package's, not the user's."""


def problem_from_exception(exc: BaseException) -> Problem:
    """The exception as a Problem whose remedy follows from where it arose: the user's code (named
    by file:line), a path of the environment, or the workbench and the libraries under it."""
    name = type(exc).__name__
    text = str(exc).strip()
    first = text.splitlines()[0] if text else name
    file, line = _compile_site(exc) or _user_frame(exc)
    at = f"{os.path.basename(file)}:{line}" if file and line else "the line shown"
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
            "user-code",
        )
    if name == "OutOfResources":
        return Problem(
            "out-of-resources",
            f"the compiled kernel needs more than the GPU has: {first}",
            "lower BLOCK sizes or num_stages for this config (see `workbench resources`)",
            file,
            line,
            detail,
            "user-code",
        )
    if name in ("CompilationError", "CompileTimeAssertionFailure", "PTXASError", "MLIRError"):
        return Problem(
            "compile-error",
            f"Triton could not compile the kernel: {_compile_message(exc, text)}",
            f"fix the kernel source at {at}",
            file,
            line,
            detail,
            "user-code",
        )
    if name == "InterpreterError":  # the interpreter's face of a front-end (compile) error
        return Problem(
            "compile-error",
            f"Triton rejected the kernel (interpreter): {first}",
            f"fix the kernel source at {at}",
            file,
            line,
            detail,
            "user-code",
        )
    if file:
        remedy = f"fix the code at {at} (the traceback is in the detail: --json, or the run log)"
        return Problem("exception", f"{name}: {first}", remedy, file, line, detail, "user-code")
    if isinstance(exc, OSError) and exc.filename:
        return Problem(
            "os-error",
            f"{exc.strerror or name}: {exc.filename}",
            f"check that {exc.filename} (or the folder it should be in) exists and is writable",
            str(exc.filename),
            None,
            detail,
            "environment",
        )
    return Problem(
        "internal-error",
        f"{name}: {first}",
        "the error arose inside the workbench or a library it runs, not in the kernel's code: "
        "the traceback is in the detail (--json, or the run log); please report it",
        None,
        None,
        detail,
        "tool",
    )


def _compile_message(exc: BaseException, text: str) -> str:
    """Triton's message opens with "at LINE:COL:" (counted inside the function) and the source;
    with the absolute line known (the Problem's file:line) the error itself is enough."""
    message = getattr(exc, "error_message", None)
    cause = exc.__cause__
    if not message and cause is not None and not hasattr(cause, "error_message"):
        message = str(cause)  # 3.4 keeps a builtin's error (tl.arange's, say) as the cause only
    if message and _compile_site(exc):
        return str(message).strip().splitlines()[-1]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[:2] + lines[-1:]) if len(lines) > 3 else " | ".join(lines)


def _compile_site(exc: BaseException) -> tuple[str, int] | None:
    """File and absolute line of a Triton front-end error, whose node's line is counted from the
    function's `def`: the JITFunction with that source is a frame's self, src or fn on the way
    (Triton strips its code generator's frames, not those of the compile call or the launch)."""
    node, src = getattr(exc, "node", None), getattr(exc, "src", None)
    lineno = getattr(node, "lineno", None)
    if not isinstance(lineno, int) or src is None:
        return None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        for value in (frame.f_locals.get(k) for k in ("self", "src", "fn")):
            jit = value if hasattr(value, "src") else getattr(value, "fn", None)
            fn = getattr(jit, "fn", None)
            if getattr(jit, "src", None) == src and inspect.isfunction(fn):
                lines, start = inspect.getsourcelines(fn)
                offset = next((i for i, t in enumerate(lines) if t.lstrip().startswith("def")), 0)
                return fn.__code__.co_filename, start + offset + lineno - 1
    return None


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
            if path.startswith(_NOT_USER) or "site-packages" in path or path.startswith("<"):
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
        kind = {signal.SIGSEGV.value: "segfault", signal.SIGABRT.value: "abort"}.get(sig, "killed")
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
