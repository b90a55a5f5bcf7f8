"""Shared fixtures: the backends every conformance test runs on."""
from __future__ import annotations

import os

import pytest


def _default_backends() -> list[str]:
    """"numpy", plus "opencl" when an OpenCL device can be found."""
    from teflon_py.errors import BackendError

    try:
        from teflon_py.opencl import device

        device.select_device()
    except (ImportError, BackendError):  # no pyopencl, no platform, no device: NumPy only
        return ["numpy"]
    return ["numpy", "opencl"]


#: "numpy" always; delegate names join when their backend exists (TEFLON_TEST_BACKENDS overrides).
BACKENDS = os.environ["TEFLON_TEST_BACKENDS"].split(",") if os.environ.get("TEFLON_TEST_BACKENDS") \
    else _default_backends()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param
