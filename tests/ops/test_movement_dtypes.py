"""Data-movement ops on element types the op grids elsewhere leave out: each (op, dtype) the
OpenCL registry lowers runs against LiteRT at least once, and the OpenCL backend must claim and run
it (the harness pins every registered lowering). Pairs LiteRT refuses (bool DEPTH_TO_SPACE, int64 UNPACK, ...) are not lowered
at all (``lowerings.movement.NO_ORACLE``); those it accepts are checked here."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.tflite import options as O
from tests.harness import check_model, single_op

I32 = np.int32


def _case(op: str, dtype: type) -> bytes:
    x = {"dtype": dtype}
    if op == "DEPTH_TO_SPACE":
        return single_op(op, [{**x, "shape": (1, 2, 2, 4)}], [{**x, "shape": (1, 4, 4, 1)}],
                         O.DepthToSpaceOptions(block_size=2))
    if op == "SPACE_TO_DEPTH":
        return single_op(op, [{**x, "shape": (1, 4, 4, 1)}], [{**x, "shape": (1, 2, 2, 4)}],
                         O.SpaceToDepthOptions(block_size=2))
    if op == "PACK":
        return single_op(op, [{**x, "shape": (2, 3)}, {**x, "shape": (2, 3)}], [{**x, "shape": (2, 2, 3)}],
                         O.PackOptions(values_count=2, axis=1))
    if op == "UNPACK":
        return single_op(op, [{**x, "shape": (2, 3)}], [{**x, "shape": (3,)}, {**x, "shape": (3,)}],
                         O.UnpackOptions(num=2, axis=0))
    if op == "PAD":
        return single_op(op, [{**x, "shape": (2, 3)}, {"data": np.array([[1, 0], [0, 2]], I32)}],
                         [{**x, "shape": (3, 5)}])
    if op == "SPLIT":
        return single_op(op, [{"data": np.array(0, I32)}, {**x, "shape": (4, 3)}],
                         [{**x, "shape": (2, 3)}, {**x, "shape": (2, 3)}], O.SplitOptions(num_splits=2))
    if op == "SPLIT_V":
        return single_op(op, [{**x, "shape": (4, 3)}, {"data": np.array([1, 3], I32)}, {"data": np.array(0, I32)}],
                         [{**x, "shape": (1, 3)}, {**x, "shape": (3, 3)}], O.SplitVOptions(num_splits=2))
    if op == "RESIZE_NEAREST_NEIGHBOR":
        return single_op(op, [{**x, "shape": (1, 2, 3, 2)}, {"data": np.array([4, 5], I32)}],
                         [{**x, "shape": (1, 4, 5, 2)}], O.ResizeNearestNeighborOptions())
    raise AssertionError(op)


CASES = [("PAD", np.bool_), ("DEPTH_TO_SPACE", np.int32), ("SPACE_TO_DEPTH", np.int64), ("PACK", np.int32),
         ("UNPACK", np.int32), ("SPLIT", np.int32), ("SPLIT_V", np.int64), ("RESIZE_NEAREST_NEIGHBOR", np.int16)]


def test_lowerings_without_an_oracle_are_not_registered() -> None:
    from teflon_py.opencl.lowerings import LOWERINGS
    from teflon_py.opencl.lowerings.movement import NO_ORACLE

    for op, kind in NO_ORACLE | {("RESIZE_NEAREST_NEIGHBOR", "int64")}:
        assert kind not in LOWERINGS.get(op, {}), (op, kind)
        with pytest.raises(RuntimeError):  # LiteRT itself refuses the model
            from tests.harness import run_litert

            run_litert(_case(op, {"bool": np.bool_, "int16": np.int16, "int32": np.int32,
                                  "int64": np.int64}[kind]), [])


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o}-{np.dtype(d).name}" for o, d in CASES])
def test_movement_dtype(op: str, dtype: type, backend: str) -> None:
    check_model(_case(op, dtype), backend)
