"""What an OpenCL compiler says while it builds (clang's "36 warnings generated." on the process's
stderr, PyOpenCL's ``CompilerWarning``), held back unless ``TEFLON_DEBUG`` is set: a build that
succeeds says nothing; one that fails says why in its BackendError (the build log)."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator

from teflon_py.plan_report import debug_enabled

#: What the last captured build wrote (kept for ``TEFLON_DEBUG`` and tests).
last_output: list[str] = []


def _is_compiler_warning(category: type[Warning]) -> bool:
    return category.__name__ == "CompilerWarning"  # pyopencl's, matched by name: no import here


@contextlib.contextmanager
def captured() -> Iterator[None]:
    """Run a build with file descriptor 2 redirected to a temporary file and PyOpenCL's compiler
    warnings recorded; afterwards other warnings are re-issued, and the compiler's words are
    printed to stderr only with ``TEFLON_DEBUG``."""
    if debug_enabled():
        yield
        return
    with contextlib.ExitStack() as stack:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no file descriptor 2 (embedded interpreters): warnings only
            saved = None
        sink = stack.enter_context(tempfile.TemporaryFile()) if saved is not None else None
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        try:
            if sink is not None:
                os.dup2(sink.fileno(), 2)
            yield
        finally:
            if saved is not None:
                os.dup2(saved, 2)
                os.close(saved)
            text = b""
            if sink is not None:
                sink.seek(0)
                text = sink.read()
            last_output[:] = [text.decode(errors="replace"),
                              *(str(w.message) for w in caught if _is_compiler_warning(w.category))]
    for w in caught:  # outside catch_warnings: the caller's filters apply again
        if not _is_compiler_warning(w.category):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
