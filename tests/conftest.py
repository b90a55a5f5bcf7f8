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


# -- pytest --kernel-report: which cases really ran device kernels, and which lowerings ran -------

_REPORT: dict = {"cases": {}, "launched": {}, "lowerings": {}}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--kernel-report", action="store_true",
                     help="print, per backend, how many test cases launched device kernels and which "
                          "(op, dtype) lowerings ran")


@pytest.fixture(autouse=True)
def _kernel_recorder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if not request.config.getoption("--kernel-report"):
        yield
        return
    from teflon_py.opencl import compiled

    ran: set = set()
    invoked = [False]
    original = compiled.OpenCLPartition.invoke

    def invoke(self, inputs):
        invoked[0] = invoked[0] or self.stats.get("launches", 0) > 0
        ran.update(tuple(x) for x in self.stats.get("lowerings", ()))
        return original(self, inputs)

    monkeypatch.setattr(compiled.OpenCLPartition, "invoke", invoke)
    yield
    callspec = getattr(request.node, "callspec", None)
    backend = callspec.params.get("backend", "other") if callspec is not None else "other"
    for key, inc in (("cases", 1), ("launched", int(invoked[0]))):
        _REPORT[key][backend] = _REPORT[key].get(backend, 0) + inc
    for low in ran:
        _REPORT["lowerings"][low] = _REPORT["lowerings"].get(low, 0) + 1


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption("--kernel-report"):
        return
    tr = terminalreporter
    tr.section("kernel report")
    for backend in sorted(_REPORT["cases"]):
        tr.write_line(f"{backend}: {_REPORT['launched'].get(backend, 0)} of {_REPORT['cases'][backend]} cases "
                      "launched OpenCL kernels")
    from teflon_py.opencl.lowerings import LOWERINGS

    registered = {(op, kind) for op, kinds in LOWERINGS.items() for kind in kinds}
    tr.write_line(f"lowerings run: {len(set(_REPORT['lowerings']) & registered)} of {len(registered)} registered")
    never = sorted(registered - set(_REPORT["lowerings"]))
    tr.write_line("never run: " + (", ".join(f"{op} ({kind})" for op, kind in never) or "none"))
