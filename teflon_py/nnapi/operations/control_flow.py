"""IF and WHILE (feature level 4): operations that run referenced models (``MODEL`` operands set
with ``set_operand_value_from_model``). Each referenced model is lowered to an op-layer subgraph
for the shapes of the values passed in; the op layer's IF and WHILE run them. NNAPI's WHILE body
returns only its input-output and state-only values; the op layer's (TFLite's) returns every
loop value, so the lowered body passes its input-only values through as extra outputs."""
from __future__ import annotations

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operands import Operand
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.control_flow import IfAttrs, WhileAttrs


@signature(Op.IF)
def if_signature(s: Sig) -> None:
    if s.n_in < 3 or s.n_out < 1:
        raise s.error(f"takes a condition, two models and the branch inputs, and at least one output; "
                      f"got {s.n_in} inputs and {s.n_out} outputs")
    s.expect([T.TENSOR_BOOL8, T.MODEL, T.MODEL, *s.inputs[3:]], s.outputs, level=4)


@signature(Op.WHILE)
def while_signature(s: Sig) -> None:
    if s.n_in < 3 or s.n_out < 1:
        raise s.error(f"takes two models and the loop values, and at least one output; got {s.n_in} inputs "
                      f"and {s.n_out} outputs")
    s.expect([T.MODEL, T.MODEL, *s.inputs[2:]], s.outputs, level=4)


def _agrees(outer: Operand, inner: Operand) -> str | None:
    """Why a referenced model's operand does not match the operation's, or None (same type,
    scale and zero point; ranks and dimensions equal where both are specified)."""
    if (outer.type, outer.scale, outer.zero_point) != (inner.type, inner.scale, inner.zero_point):
        return f"{inner.describe()} (scale {inner.scale}, zero point {inner.zero_point}) differs from " \
               f"{outer.describe()} (scale {outer.scale}, zero point {outer.zero_point})"
    both = outer.dims is not None and inner.dims is not None
    if both and (len(outer.dims) != len(inner.dims) or any(a and b and a != b for a, b in zip(outer.dims, inner.dims))):
        return f"{inner.describe()} has other dimensions than {outer.describe()}"
    return None


def _check_model(c: Call, k: int, role: str, outer_in: list[Operand], outer_out: list[Operand]) -> None:
    ref = c.model_ref(k)
    ins, outs = [ref.operands[i] for i in ref.inputs], [ref.operands[o] for o in ref.outputs]
    if len(ins) != len(outer_in) or len(outs) != len(outer_out):
        raise c.error(f"the {role} model takes {len(ins)} inputs and gives {len(outs)} outputs, the operation "
                      f"passes {len(outer_in)} and expects {len(outer_out)}", k)
    for what, pairs in (("input", zip(outer_in, ins)), ("output", zip(outer_out, outs))):
        for j, (outer, inner) in enumerate(pairs):
            why = _agrees(outer, inner)
            if why:
                raise c.error(f"{role} model {what} {j}: {why}", k)


@lowering(Op.IF)
def lower_if(c: Call) -> None:
    cond = c.operand(0)
    if cond.dims is None or tuple(c.shape(0)) != (1,):
        raise c.error(f"the condition must be a TENSOR_BOOL8 of shape [1], got {list(c.shape(0))}", 0)
    passed = [c.operand(k) for k in range(3, c.n_in)]
    results = [c.out_operand(k) for k in range(c.n_out)]
    for k, role in ((1, "then"), (2, "else")):
        _check_model(c, k, role, passed, results)
    shapes = [c.shape(k) for k in range(3, c.n_in)]
    attrs = IfAttrs(c.subgraph(1, shapes), c.subgraph(2, shapes))
    c.emit("IF", attrs, [c.input(0, stored=True), *(c.input(k, stored=True) for k in range(3, c.n_in))],
           [c.output(k, stored=True) for k in range(c.n_out)])


@lowering(Op.WHILE)
def lower_while(c: Call) -> None:
    cond_model, body_model = c.model_ref(0), c.model_ref(1)
    values = [c.operand(k) for k in range(2, c.n_in)]
    m = c.n_out
    k_state = len(body_model.outputs) - m
    n_only = len(body_model.inputs) - m - k_state
    if k_state < 0 or n_only < 0 or m + k_state + n_only != len(values):
        raise c.error(f"the body model's {len(body_model.inputs)} inputs and {len(body_model.outputs)} outputs do "
                      f"not split the operation's {len(values)} loop values into input-output ({m}), state and "
                      "input-only values", 1)
    _check_model(c, 1, "body", values, values[: m + k_state])
    bool_out = [o for o in cond_model.outputs if cond_model.operands[o].type == T.TENSOR_BOOL8]
    if len(cond_model.outputs) != 1 or not bool_out:
        raise c.error("the condition model must give exactly one TENSOR_BOOL8 output of shape [1]", 0)
    cond_out = cond_model.operands[bool_out[0]]
    _check_model(c, 0, "condition", values, [cond_out])
    for j in range(m):
        why = _agrees(values[j], c.out_operand(j))
        if why:
            raise c.error(f"output {j} must match loop value {j}: {why}", j, "output")
    shapes = [c.shape(k) for k in range(2, c.n_in)]
    attrs = WhileAttrs(c.subgraph(0, shapes), c.subgraph(1, shapes, pass_through=n_only))
    loop = [c.input(k, stored=True) for k in range(2, c.n_in)]
    outs = [c.output(j, stored=True) for j in range(m)]
    outs += [c.temp(like=t, what=f"loop value {m + j} after the loop") for j, t in enumerate(loop[m:])]
    c.emit("WHILE", attrs, loop, outs)
