"""``OpenCLDelegate``: the OpenCL backend behind ``teflon_py.load_delegate("opencl", options)``.

Options (values may be strings, as LiteRT's ``load_delegate`` passes them):
- ``device``: "P:D" or a name substring (see ``device.select_device``); default
  ``TEFLON_CL_DEVICE``, else the first GPU, else PoCL's CPU.
- ``cache_dir``: where compiled programs are cached (default ``TEFLON_CACHE_DIR``, else
  ``~/.cache/teflon-py/cl``).
- ``max_partitions`` (default all) and ``min_nodes`` (default 1): partitioner limits.
- ``precision``: "fp32" (the only one so far).
- ``fallback``: "warn" (default) or "error": whether a partition that fails to build or run, or a
  missing device, runs on NumPy with a ``FallbackWarning`` or raises; default ``TEFLON_FALLBACK``.
- ``kernel_family``: "cpu" or "gpu", the float kernels' style (``params``); default
  ``TEFLON_CL_FAMILY``, else chosen from the device (GPU-style for GPUs and llvmpipe).

``check`` is pure (the lowering registry's verdict from shapes, types and constants); the
device and its context are created at the first ``compile``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from teflon_py import ir
from teflon_py.delegate import CompiledPartition, Delegate, Verdict
from teflon_py.errors import FALLBACK_POLICIES
from teflon_py.opencl import lowerings as lowering
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.params import KernelParams, check_family, params_for

OPTIONS = ("device", "cache_dir", "max_partitions", "min_nodes", "precision", "fallback", "kernel_family")
PRECISIONS = ("fp32",)


class OpenCLDelegate(Delegate):
    """Runs partitions of float32 ops as OpenCL kernels (see ``lowering`` for what it claims)."""

    name = "opencl"

    def __init__(self, options: Mapping[str, Any] | None = None):
        options = dict(options or {})
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ValueError(f"unknown OpenCL delegate option(s) {', '.join(unknown)}; known: {', '.join(OPTIONS)}")
        precision = str(options.get("precision", "fp32")).lower()
        if precision not in PRECISIONS:
            raise ValueError(f"OpenCL delegate precision {options['precision']!r} is not supported yet "
                             f"(supported: {', '.join(PRECISIONS)})")
        self.precision = precision
        fallback = options.get("fallback")
        if fallback not in (None, ""):
            fallback = str(fallback).strip().lower()
            if fallback not in FALLBACK_POLICIES:
                raise ValueError(f"OpenCL delegate option fallback must be one of {', '.join(FALLBACK_POLICIES)}, "
                                 f"got {options['fallback']!r}")
            self.fallback = fallback
        self.device_spec: str | None = None if options.get("device") in (None, "") else str(options["device"])
        self.cache_dir: str | None = None if options.get("cache_dir") in (None, "") else str(options["cache_dir"])
        self.max_partitions = _int_option(options, "max_partitions", None, minimum=1)
        self.min_nodes = _int_option(options, "min_nodes", 1, minimum=1)
        family = options.get("kernel_family")
        self.family: str | None = None if family in (None, "") else check_family(family, "OpenCL delegate option")
        self._params: KernelParams | None = None
        self._dc: Any = None
        self._cache: Any = None
        self._caps: Caps | None = None

    def check(self, graph: ir.Graph, op: ir.Operation) -> Verdict:
        """Whether ``op`` lowers to OpenCL kernels on this delegate's device (its capabilities
        are read once; no context, program or buffer is made)."""
        return lowering.check_op(graph, op, self.caps)

    @property
    def caps(self) -> Caps:
        """The chosen device's capabilities (``device`` option, else ``TEFLON_CL_DEVICE``, ...)."""
        if self._caps is None:
            from teflon_py.opencl.runtime import device

            self._caps = Caps.of(self._dc.device if self._dc is not None else device.select_device(self.device_spec))
        return self._caps

    @property
    def params(self) -> KernelParams:
        """The kernel family and sizes for the chosen device (``kernel_family`` option, else
        ``TEFLON_CL_FAMILY``, else from its capabilities)."""
        if self._params is None:
            self._params = params_for(self.caps, self.family)
        return self._params

    def _device(self) -> tuple[Any, Any]:
        if self._dc is None:
            from teflon_py.opencl.runtime import device, programs

            self._dc = device.get_context(spec=self.device_spec)
            self._cache = programs.program_cache(self._dc, self.cache_dir)
        return self._dc, self._cache

    def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
        """Lower ``partition`` to one launch list on the device (BackendError on failure)."""
        from teflon_py.opencl.compiled import compile_partition

        dc, cache = self._device()
        return compile_partition(dc, cache, graph, partition, self.params)

    @property
    def device_name(self) -> str | None:
        """The device's name once one is chosen (after the first compile), else None."""
        return self._dc.name if self._dc is not None else None

    def device_description(self) -> str | None:
        """"<device> (<platform>, driver <version>)" once a partition was compiled, else None."""
        if self._dc is None:
            return None
        dev = self._dc.device
        return f"{dev.name.strip()} ({dev.platform.name.strip()}, driver {dev.driver_version.strip()})"

    def close(self) -> None:
        self._dc = None
        self._cache = None


def _int_option(options: Mapping[str, Any], key: str, default: int | None, minimum: int) -> int | None:
    value = options.get(key)
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"OpenCL delegate option {key} must be an integer, got {value!r}") from None
    if n < minimum:
        raise ValueError(f"OpenCL delegate option {key} must be at least {minimum}, got {n}")
    return n
