"""Android's Neural Networks API (NNAPI) in Python, on teflon-py's backends.

    from teflon_py import nnapi
    m = nnapi.Model()
    x = m.add_operand(nnapi.OperandType.TENSOR_FLOAT32, [1, 2, 2, 1])
    ...
    m.add_operation(nnapi.OperationType.ADD, inputs=[x, y, act], outputs=[z])
    m.identify_inputs_and_outputs(inputs=[x, y], outputs=[z])
    m.finish()
    c = nnapi.Compilation(m, delegates=[teflon_py.load_delegate("opencl")])
    c.finish()
    e = nnapi.Execution(c)
    e.set_input(0, a); e.set_input(1, b)
    e.compute()
    z = e.get_output(0)

A finished model is a graph of the op layer (``lowering``): operations TFLite also has become
the same ops (with their kernels and OpenCL lowerings), the others ops of their own.
"""
from teflon_py.nnapi.compilation import Compilation, supported_operations
from teflon_py.nnapi.enums import (
    DeviceType,
    FuseCode,
    OperandType,
    OperationType,
    PaddingCode,
    Preference,
    Priority,
    ResultCode,
)
from teflon_py.nnapi.errors import NNAPIError
from teflon_py.nnapi.execution import Execution
from teflon_py.nnapi.model import Model

__all__ = ["Compilation", "DeviceType", "Execution", "FuseCode", "Model", "NNAPIError", "OperandType",
           "OperationType", "PaddingCode", "Preference", "Priority", "ResultCode", "supported_operations"]
