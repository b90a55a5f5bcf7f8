"""Threads and repeats (issue 14, item 5): one interpreter per thread runs concurrently with the
single-threaded results; one interpreter shared by threads serialises each inference held under
its lock (or a SignatureRunner call) and refuses inputs mixed from two threads with a clear error;
repeated invokes are bit-identical on every backend; NNAPI executions of one compilation from
several threads each get their own outputs."""
from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import teflon_py
from teflon_py.interpreter import ConcurrentUseError
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.options import AddOptions

THREADS = 4


def _delegates(backend: str) -> list:
    return [] if backend == "numpy" else [teflon_py.load_delegate(backend)]


def _inputs(it: teflon_py.Interpreter, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for d in it.get_input_details():
        dtype = np.dtype(d["dtype"])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, info.max, d["shape"], endpoint=True).astype(dtype))
        else:
            out.append(rng.standard_normal(d["shape"]).astype(dtype))
    return out


def _infer(it: teflon_py.Interpreter, xs: list[np.ndarray]) -> list[np.ndarray]:
    with it.lock:
        for d, x in zip(it.get_input_details(), xs):
            it.set_tensor(d["index"], x)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _in_threads(work: Callable[[int], object], n: int = THREADS) -> list:
    results: list = [None] * n
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            results[k] = work(k)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_repeated_invokes_are_bit_identical(backend: str, demo_path: str) -> None:
    it = teflon_py.Interpreter(model_path=demo_path, experimental_delegates=_delegates(backend))
    it.allocate_tensors()
    xs = _inputs(it, 1)
    first = _infer(it, xs)
    for _ in range(4):
        for a, b in zip(_infer(it, xs), first):
            assert a.tobytes() == b.tobytes()


def test_one_interpreter_per_thread(backend: str, demo_path: str) -> None:
    reference = teflon_py.Interpreter(model_path=demo_path, experimental_delegates=_delegates(backend))
    reference.allocate_tensors()
    inputs = [_inputs(reference, seed) for seed in range(THREADS)]
    expected = [_infer(reference, xs) for xs in inputs]

    def work(k: int) -> list[np.ndarray]:
        it = teflon_py.Interpreter(model_path=demo_path, experimental_delegates=_delegates(backend))
        it.allocate_tensors()
        return [_infer(it, inputs[k]) for _ in range(3)][-1]

    for got, want in zip(_in_threads(work), expected):
        for a, b in zip(got, want):
            assert a.tobytes() == b.tobytes()


def test_a_shared_interpreter_serialises_locked_inferences(backend: str, demo_path: str) -> None:
    it = teflon_py.Interpreter(model_path=demo_path, experimental_delegates=_delegates(backend))
    it.allocate_tensors()
    inputs = [_inputs(it, seed) for seed in range(THREADS)]
    expected = [_infer(it, xs) for xs in inputs]
    got = _in_threads(lambda k: [_infer(it, inputs[k]) for _ in range(5)])
    for runs, want in zip(got, expected):
        for outs in runs:
            for a, b in zip(outs, want):
                assert a.tobytes() == b.tobytes()


def test_inputs_mixed_from_two_threads_are_refused(demo_path: str) -> None:
    it = teflon_py.Interpreter(model_path=demo_path)
    it.allocate_tensors()
    d = it.get_input_details()[0]
    x = _inputs(it, 0)[0]
    worker = threading.Thread(target=it.set_tensor, args=(d["index"], x))
    worker.start()
    worker.join()
    it.set_tensor(d["index"], x)
    with pytest.raises(ConcurrentUseError, match="inputs were set by another thread since the last invoke"):
        it.invoke()
    it.set_tensor(d["index"], x)  # the error cleared the record: one thread's inputs run
    it.invoke()


def _signature_model() -> bytes:
    mb = ModelBuilder()
    g = mb.main
    a = g.add_input("a", (3,), np.float32)
    b = g.add_input("b", (3,), np.float32)
    y = g.add_tensor("y", (3,), np.float32)
    g.add_op("ADD", [a, b], [y], AddOptions())
    g.mark_outputs(y)
    mb.add_signature("serving", {"a": a, "b": b}, {"y": y})
    return mb.build()


def test_signature_runner_calls_from_threads(backend: str) -> None:
    it = teflon_py.Interpreter(model_content=_signature_model(), experimental_delegates=_delegates(backend))
    runner = it.get_signature_runner("serving")

    def work(k: int) -> bool:
        ok = True
        for j in range(20):
            a = np.full(3, k, np.float32)
            b = np.full(3, j, np.float32)
            ok &= bool(np.array_equal(runner(a=a, b=b)["y"], a + b))
        return ok

    assert all(_in_threads(work))


def test_nnapi_executions_from_threads(backend: str) -> None:
    from teflon_py import nnapi
    from tests.nnapi.harness import Spec, compile_for

    s = Spec()
    a = s.input(nnapi.OperandType.TENSOR_FLOAT32, [4])
    y = s.output(nnapi.OperandType.TENSOR_FLOAT32, [4])
    s.op(nnapi.OperationType.MUL, [a, a, s.i32(0)], [y])
    c = compile_for(s.model(), backend)

    def work(k: int) -> bool:
        ok = True
        for j in range(10):
            x = np.full(4, k + j, np.float32)
            e = nnapi.Execution(c)
            e.set_input(0, x)
            e.compute()
            ok &= bool(np.array_equal(e.get_output(0), x * x))
        return ok

    assert all(_in_threads(work))
