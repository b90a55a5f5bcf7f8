"""``NNAPIError``: what an NNAPI call returns instead of ``ANEURALNETWORKS_NO_ERROR``."""
from __future__ import annotations

from teflon_py.errors import TeflonError
from teflon_py.nnapi.enums import ResultCode


class NNAPIError(TeflonError, ValueError, RuntimeError):
    """An NNAPI call failed; ``code`` is the ``ResultCode`` NNAPI's runtime returns there, the
    message names the operation, the operand (by position) and the rule."""

    def __init__(self, code: ResultCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = ResultCode(code)
        self.reason = message


def bad_data(message: str) -> NNAPIError:
    return NNAPIError(ResultCode.BAD_DATA, message)


def bad_state(message: str) -> NNAPIError:
    return NNAPIError(ResultCode.BAD_STATE, message)


def op_failed(message: str) -> NNAPIError:
    return NNAPIError(ResultCode.OP_FAILED, message)
