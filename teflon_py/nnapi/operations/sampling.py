"""RANDOM_MULTINOMIAL (op layer: RANDOM_MULTINOMIAL, see ``teflon_py.ops.sampling``; TFLite's
MULTINOMIAL is not in the op layer). The seeds stay a tensor read when the operation runs, so
they may come from an execution's inputs or an earlier operation."""
from __future__ import annotations

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.sampling import MultinomialAttrs


@signature(Op.RANDOM_MULTINOMIAL)
def multinomial_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3})
    s.expect([t, T.INT32, T.TENSOR_INT32], [T.TENSOR_INT32], level=3)


@lowering(Op.RANDOM_MULTINOMIAL)
def lower_multinomial(c: Call) -> None:
    if c.rank(0) != 2:
        raise c.error(f"the logits must be 2-D [batches, classes], got shape {list(c.shape(0))}", 0)
    samples = c.scalar(1)
    if samples < 1:
        raise c.error(f"the sample count must be positive, got {samples}", 1)
    if c.shape(2) != (2,):
        raise c.error(f"the seeds must have shape [2], got {list(c.shape(2))}", 2)
    c.emit("RANDOM_MULTINOMIAL", MultinomialAttrs(samples), [c.input(0), c.input(2)], [c.output(0)])
