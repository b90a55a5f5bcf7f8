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
#: A substring of the OpenCL device name these tests must run on (CI's rusticl stage sets
#: "llvmpipe"): the default device must match, and so must every device a partition ran on.
EXPECT_DEVICE_ENV = "TEFLON_EXPECT_DEVICE"


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


#: The OpenCL kernel families (``opencl.params``) a test taking ``family`` runs under: both, so
#: CI's one PoCL run checks the CPU-style and the GPU-style kernels; only ``TEFLON_CL_FAMILY``'s
#: when that is set (a device where the other family cannot build).
FAMILIES = [os.environ["TEFLON_CL_FAMILY"].strip().lower()] if os.environ.get("TEFLON_CL_FAMILY") \
    else ["cpu", "gpu"]


@pytest.fixture(params=FAMILIES)
def family(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, device: None) -> str:
    """The opencl backend's kernel family for this case, forced through ``TEFLON_CL_FAMILY``."""
    monkeypatch.setenv("TEFLON_CL_FAMILY", request.param)
    return request.param


@pytest.fixture
def gpu_family(monkeypatch: pytest.MonkeyPatch, device: None) -> str:
    """The opencl backend with its GPU-style float kernels forced (``TEFLON_CL_FAMILY=gpu``),
    whatever the device's default: returns the backend name for ``check_model``."""
    monkeypatch.setenv("TEFLON_CL_FAMILY", "gpu")
    return "opencl"


@pytest.fixture
def lenient(monkeypatch: pytest.MonkeyPatch) -> None:
    """TEFLON_STRICT=0 for tests of the fallback itself (a failing backend falls back to NumPy)."""
    monkeypatch.setenv("TEFLON_STRICT", "0")


# -- which lowerings ran: pytest --kernel-report, and the check that every lowering runs ---------

_REPORT: dict = {"cases": {}, "launched": {}, "lowerings": {}, "devices": set()}
_CASE: dict = {"ran": set(), "launched": False}  # the running test case's record
_FAMILIES_DONE: set[str] = set()  # --one-per-family: tests/ops modules with a passing kernel case


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--kernel-report", action="store_true",
                     help="print, per backend, how many test cases launched device kernels and which "
                          "(op, dtype) lowerings ran")
    parser.addoption("--one-per-family", action="store_true",
                     help="in each tests/ops module (an op family) run opencl cases only until one has "
                          "passed after launching kernels; skip its other cases (CI's rusticl stage)")


def _expected_device() -> str:
    return os.environ.get(EXPECT_DEVICE_ENV, "").strip().lower()


def pytest_configure(config: pytest.Config) -> None:
    """Record, for every OpenCL partition invoked, its launches, (op, dtype) lowerings and device;
    with TEFLON_EXPECT_DEVICE, refuse to start unless the default device is that one."""
    expected = _expected_device()
    if expected and "opencl" not in BACKENDS:
        raise pytest.UsageError(f"{EXPECT_DEVICE_ENV}={expected!r} but the opencl backend is not tested")
    if "opencl" not in BACKENDS:
        return
    if expected:
        from teflon_py.opencl.runtime import device

        name = device.select_device().name.strip()
        if expected not in name.lower():
            raise pytest.UsageError(f"{EXPECT_DEVICE_ENV}={expected!r} but the OpenCL device is {name!r}")
    from teflon_py.opencl import compiled

    original = compiled.OpenCLPartition.invoke

    def invoke(self, inputs):
        if self.launch_list is not None:
            _REPORT["devices"].add(self.launch_list.dc.name)
        _CASE["launched"] = _CASE["launched"] or self.stats.get("launches", 0) > 0
        _CASE["ran"].update(tuple(x) for x in self.stats.get("lowerings", ()))
        return original(self, inputs)

    compiled.OpenCLPartition.invoke = invoke


def _family(request: pytest.FixtureRequest) -> str | None:
    """The tests/ops module of the running test, or None outside tests/ops."""
    path = request.node.path
    return str(path) if path.parent.name == "ops" and path.parent.parent.name == "tests" else None


@pytest.fixture(autouse=True)
def _kernel_recorder(request: pytest.FixtureRequest):
    callspec = getattr(request.node, "callspec", None)
    backend = callspec.params.get("backend", "other") if callspec is not None else "other"
    family = _family(request) if request.config.getoption("--one-per-family") else None
    if family is not None and (backend != "opencl" or family in _FAMILIES_DONE):
        pytest.skip("--one-per-family: only opencl cases, until one of the module's has run kernels")
    _CASE["ran"], _CASE["launched"] = set(), False
    yield
    if family is not None and getattr(request.node, "rep_call_passed", False) and _CASE["launched"]:
        _FAMILIES_DONE.add(family)
    if getattr(request.node, "rep_call_passed", False):
        for key, inc in (("cases", 1), ("launched", int(_CASE["launched"]))):
            _REPORT[key][backend] = _REPORT[key].get(backend, 0) + inc
        for low in _CASE["ran"]:
            _REPORT["lowerings"][low] = _REPORT["lowerings"].get(low, 0) + 1


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "call":  # a lowering counts as tested only by a case that passed
        item.rep_call_passed = report.passed
    return report


def _registered() -> set[tuple[str, str]]:
    from teflon_py.opencl.lowerings import LOWERINGS

    return {(op, kind) for op, kinds in LOWERINGS.items() for kind in kinds}


def _whole_suite(session: pytest.Session) -> bool:
    """Whether this session ran the whole suite, unfiltered, and every test passed."""
    opt = session.config.option
    args = [a for a in session.config.args if a not in ("tests", "tests/", ".")]
    return (not args and not opt.keyword and not opt.markexpr and not getattr(opt, "deselect", None)
            and session.testsfailed == 0 and session.testscollected > 0
            and not session.config.getoption("lf", False))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The registry check: on a whole-suite run, every registered OpenCL lowering must have been
    claimed and run by at least one passing test case (each compares against LiteRT), so a
    lowering no test reaches, or one whose check regressed to refusing, fails the run.
    With TEFLON_EXPECT_DEVICE, partitions must have run, and only on that device."""
    expected = _expected_device()
    if expected and "opencl" in BACKENDS:
        ran = sorted(_REPORT["devices"])
        if not ran or any(expected not in name.lower() for name in ran):
            session.config._wrong_devices = (expected, ran)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if "opencl" not in BACKENDS or not _whole_suite(session):
        return
    never = sorted(_registered() - set(_REPORT["lowerings"]))
    if never:
        session.config._lowerings_never_run = never
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    tr = terminalreporter
    wrong = getattr(config, "_wrong_devices", None)
    if wrong:
        tr.section(f"{EXPECT_DEVICE_ENV} not met", red=True)
        tr.write_line(f"expected every OpenCL partition on a device matching {wrong[0]!r}; "
                      f"they ran on: {', '.join(wrong[1]) or 'no device (no partition ran)'}")
    never = getattr(config, "_lowerings_never_run", None)
    if never:
        tr.section("registered OpenCL lowerings no passing test ran", red=True)
        tr.write_line(", ".join(f"{op} ({kind})" for op, kind in never))
    if not config.getoption("--kernel-report"):
        return
    tr.section("kernel report")
    for backend in sorted(_REPORT["cases"]):
        tr.write_line(f"{backend}: {_REPORT['launched'].get(backend, 0)} of {_REPORT['cases'][backend]} "
                      "passing cases launched OpenCL kernels")
    registered = _registered()
    tr.write_line(f"lowerings run: {len(set(_REPORT['lowerings']) & registered)} of {len(registered)} registered")
    never = sorted(registered - set(_REPORT["lowerings"]))
    tr.write_line("never run: " + (", ".join(f"{op} ({kind})" for op, kind in never) or "none"))


# -- shared by the CLI and fallback tests ------------------------------------------------------

@pytest.fixture(scope="module")
def demo_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The zoo's demo model written to a file."""
    from teflon_py import zoo

    path = tmp_path_factory.mktemp("models") / "demo.tflite"
    path.write_bytes(zoo.demo())
    return str(path)


@pytest.fixture
def backends():
    """add(name, factory): registers a test backend by name (for the CLI's --delegate); all are
    removed afterwards."""
    from teflon_py.delegate import _BACKENDS, register_backend

    names = []

    def add(name: str, factory):
        register_backend(name, factory)
        names.append(name)
        return name

    yield add
    for name in names:
        _BACKENDS.pop(name, None)
