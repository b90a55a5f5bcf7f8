"""NumPy fallback: one kernel per op, TFLite's exact arithmetic; runs what no delegate claims.

Importing this package imports every kernel module beside it, each of which registers its ops in
``registry.KERNELS`` with ``@register("OP_NAME")``.
"""
import importlib
import pkgutil

from teflon_py.fallback.registry import KERNELS, Node, kernel_for, register, register_custom_op

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["KERNELS", "Node", "kernel_for", "register", "register_custom_op"]
