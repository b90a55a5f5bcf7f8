"""Registers the built-in backends with ``teflon_py.delegate`` (imported lazily)."""
from __future__ import annotations

from teflon_py.delegate import register_backend


def _opencl(options):
    from teflon_py.opencl.delegate import OpenCLDelegate

    return OpenCLDelegate(options)


register_backend("opencl", _opencl)
