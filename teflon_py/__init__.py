"""teflon-py: TensorFlow Lite models on OpenCL, with a NumPy fallback, behind LiteRT's API."""
from teflon_py.delegate import load_delegate, register_backend
from teflon_py.errors import BackendError, ModelError, TeflonError, UnsupportedError
from teflon_py.fallback import register_custom_op
from teflon_py.interpreter import Interpreter

__all__ = [
    "BackendError",
    "Interpreter",
    "ModelError",
    "TeflonError",
    "UnsupportedError",
    "load_delegate",
    "register_backend",
    "register_custom_op",
]
__version__ = "0.1.0"
