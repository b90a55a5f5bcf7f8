"""Shared fixtures: the backends every conformance test runs on; strict mode for every test."""
from __future__ import annotations

import os

import pytest

#: Bugs fail tests instead of hiding in a NumPy fallback; tests of the fallback itself set it to 0.
os.environ.setdefault("TEFLON_STRICT", "1")


def _default_backends() -> list[str]:
    """"numpy", plus "opencl" when an OpenCL device can be found. Under CI (``CI`` set) a missing
    device is an error, so a broken PoCL install cannot quietly drop the OpenCL half of the suite."""
    from teflon_py.errors import BackendError

    try:
        from teflon_py.opencl.runtime import device

        device.select_device()
    except (ImportError, BackendError) as e:  # no pyopencl, no platform, no device: NumPy only
        if os.environ.get("CI"):
            raise RuntimeError(f"CI needs an OpenCL device (PoCL) for the opencl backend: {e}") from e
        return ["numpy"]
    return ["numpy", "opencl"]


#: "numpy" always; delegate names join when their backend exists (TEFLON_TEST_BACKENDS overrides).
BACKENDS = os.environ["TEFLON_TEST_BACKENDS"].split(",") if os.environ.get("TEFLON_TEST_BACKENDS") \
    else _default_backends()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def device() -> None:
    """The OpenCL device's context, for tests of the OpenCL backend itself (skipped only where no
    device exists outside CI; under CI the backend list above already made that an error)."""
    if "opencl" not in BACKENDS:
        pytest.skip("no OpenCL device: the opencl backend is not among TEFLON_TEST_BACKENDS")
    from teflon_py.opencl.runtime import device as dev

    dev.get_context()


@pytest.fixture
def lenient(monkeypatch: pytest.MonkeyPatch) -> None:
    """TEFLON_STRICT=0 for tests of the fallback itself (a failing backend falls back to NumPy)."""
    monkeypatch.setenv("TEFLON_STRICT", "0")
