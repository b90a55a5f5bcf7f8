"""ExecuTorch programs (``.pte``) whose compute lives in XNNPACK delegate graphs, on teflon-py's
backends: ``program`` reads the container, ``xnnpack`` reads and translates the delegate payloads
to the op layer, ``portable`` runs the portable operators between them, ``runtime`` is the API
(``executorch.runtime``'s)."""
from teflon_py.executorch.runtime import LoadedProgram, Method, MethodMeta, Runtime, TensorInfo

__all__ = ["LoadedProgram", "Method", "MethodMeta", "Runtime", "TensorInfo"]
