"""Run limits (issue 14, item 3): the WHILE iteration cap and the invoke time limit end a loop that
never stops with a clear error; control flow nested deeper than the limit is a ModelError, not a
RecursionError."""
from __future__ import annotations

import time

import numpy as np
import pytest

import teflon_py
from teflon_py.errors import InvokeTimeoutError, LoopLimitError, ModelError
from teflon_py.run_limits import MAX_NESTING
from teflon_py.tflite import options as opts
from teflon_py.tflite.builder import ModelBuilder
from tests.ops.test_control_flow import counter_model


def _run(model: bytes, inputs: list[np.ndarray], **kw: object) -> list[np.ndarray]:
    it = teflon_py.Interpreter(model_content=model, **kw)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def test_the_while_iteration_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_WHILE_MAX_ITERATIONS", "50")
    assert _run(counter_model(), [np.int32(0), np.int32(50)])[0] == 50  # the cap itself is allowed
    with pytest.raises(LoopLimitError, match=r"node 0 \(WHILE\): the loop ran 50 iterations, its cap "
                                             r"\(TEFLON_WHILE_MAX_ITERATIONS\)"):
        _run(counter_model(), [np.int32(0), np.int32(51)])
    monkeypatch.setenv("TEFLON_WHILE_MAX_ITERATIONS", "0")  # no cap
    assert _run(counter_model(), [np.int32(0), np.int32(60)])[0] == 60


def test_the_invoke_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_WHILE_MAX_ITERATIONS", "0")
    start = time.monotonic()
    with pytest.raises(InvokeTimeoutError, match=r"the invoke ran past its 0.2 s limit \(<bytes>: subgraph [12] before node 0"):
        _run(counter_model(), [np.int32(0), np.int32(2**31 - 1)], invoke_timeout=0.2)
    assert time.monotonic() - start < 30
    monkeypatch.setenv("TEFLON_INVOKE_TIMEOUT", "0.2")
    with pytest.raises(InvokeTimeoutError):
        _run(counter_model(), [np.int32(0), np.int32(2**31 - 1)])
    assert _run(counter_model(), [np.int32(0), np.int32(3)], invoke_timeout=60)[0] == 3
    with pytest.raises(ValueError, match="the invoke timeout must be positive"):
        teflon_py.Interpreter(model_content=counter_model(), invoke_timeout=0)


def _nested_ifs(depth: int) -> bytes:
    """IF in the main graph calling a branch that holds an IF calling a deeper branch ... ``depth``
    levels; the deepest branch returns its input."""
    mb = ModelBuilder()
    graphs = [mb.main] + [mb.add_graph(f"level{k}") for k in range(1, depth + 1)]
    for k, g in enumerate(graphs):
        x = g.add_input("x", [1], np.float32)
        if k == depth:
            g.mark_outputs(x)
            continue
        c = g.add_constant("c", np.array([True]))
        y = g.add_tensor("y", [1], np.float32)
        nxt = k + 1
        g.add_op("IF", [c, x], [y], opts.IfOptions(then_subgraph_index=nxt, else_subgraph_index=nxt))
        g.mark_outputs(y)
    return mb.build()


def test_control_flow_nesting() -> None:
    x = np.array([2.5], np.float32)
    assert _run(_nested_ifs(MAX_NESTING), [x])[0] == x
    with pytest.raises(ModelError, match=f"control flow nests more than {MAX_NESTING} subgraphs deep"):
        _run(_nested_ifs(MAX_NESTING + 1), [x])
