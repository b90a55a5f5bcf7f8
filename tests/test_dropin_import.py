"""``teflon_py.interpreter`` as a drop-in for ``ai_edge_litert.interpreter`` (issue 13 item 5)."""
from __future__ import annotations

import inspect
import warnings

import ai_edge_litert.interpreter as litert
import numpy as np
import pytest

import teflon_py
import teflon_py.interpreter as ours
from teflon_py import zoo


def test_exports_what_litert_exports() -> None:
    public = {n for n in dir(litert) if not n.startswith("_") and isinstance(getattr(litert, n), type)}
    public |= {"load_delegate"}
    assert public <= set(ours.__all__)
    from teflon_py.interpreter import Delegate, Interpreter, OpResolverType, load_delegate

    assert Interpreter is teflon_py.Interpreter and load_delegate is teflon_py.load_delegate
    assert isinstance(load_delegate("opencl"), Delegate)
    assert [m.name for m in OpResolverType] == [m.name for m in litert.OpResolverType]


def test_constructor_takes_litert_keywords_and_no_others() -> None:
    theirs = inspect.signature(litert.Interpreter.__init__).parameters
    mine = inspect.signature(ours.Interpreter.__init__).parameters
    # LiteRT's parameters, in its order; teflon-py's own options only after them, keyword-only
    assert list(mine)[:len(theirs)] == list(theirs)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(mine.values())[len(theirs):])
    model = zoo.demo()
    with pytest.raises(TypeError, match="experimental_delegate"):
        ours.Interpreter(model_content=model, experimental_delegate=[])  # the typo LiteRT refuses too
    with pytest.raises(TypeError):
        litert.Interpreter(model_content=model, experimental_delegate=[])


@pytest.mark.parametrize("resolver", [*ours.OpResolverType, *litert.OpResolverType])
def test_op_resolver_type_is_accepted_and_results_unchanged(resolver) -> None:
    model = zoo.demo()
    x = np.random.default_rng(1).uniform(-1, 1, (1, 32, 32, 3)).astype(np.float32)
    results = []
    for kwargs in ({}, {"experimental_op_resolver_type": resolver}):
        it = ours.Interpreter(model_content=model, **kwargs)
        it.allocate_tensors()
        it.set_tensor(0, x)
        it.invoke()
        results.append(it.get_tensor(it.get_output_details()[0]["index"]))
    np.testing.assert_array_equal(results[0], results[1])


def test_unknown_op_resolver_type_is_litert_s_value_error() -> None:
    with pytest.raises(ValueError, match="Unrecognized passed in op resolver type"):
        ours.Interpreter(model_content=zoo.demo(), experimental_op_resolver_type="fast")


def test_num_threads_is_ignored_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ours, "_warned_num_threads", False)
    model = zoo.demo()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours.Interpreter(model_content=model, num_threads=1)
        assert not caught  # one thread is what the fallback does anyway
        ours.Interpreter(model_content=model, num_threads=4)
        ours.Interpreter(model_content=model, num_threads=2)
    assert len(caught) == 1 and "ignores num_threads=4" in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller's line
    with pytest.raises(ValueError, match="type of num_threads should be int"):
        ours.Interpreter(model_content=model, num_threads="4")


def test_interpreter_with_custom_ops() -> None:
    it = ours.InterpreterWithCustomOps(model_content=zoo.demo(), custom_op_registerers=[])
    it.allocate_tensors()
    with pytest.raises(ValueError, match="register_custom_op"):
        ours.InterpreterWithCustomOps(model_content=zoo.demo(), custom_op_registerers=["Register_MyOp"])


@pytest.mark.parametrize("library", [None, 3, b"opencl"])
def test_load_delegate_of_no_name_is_a_type_error(library) -> None:
    with pytest.raises(TypeError, match="delegate name"):
        teflon_py.load_delegate(library)
    with pytest.raises(TypeError, match="options"):
        teflon_py.load_delegate("opencl", ["device", "0:0"])
