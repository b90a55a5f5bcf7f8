"""NNAPI's operations, one module per family: each operation's ``@signature`` (operand counts
and types) beside its ``@lowering`` (the remaining rules and the translation into the op layer).
Importing this package fills ``teflon_py.nnapi.registry.OPERATIONS``."""
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
