"""TFLite options <-> op-layer attributes: HASHTABLE_LOOKUP and LSH_PROJECTION (see
``teflon_py.ops.lookup``). TFLite's SPARSE projection offsets each signature (LshAttrs' default)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.ops.lookup import LshAttrs
from teflon_py.tflite.options import LSHProjectionOptions
from teflon_py.tflite.schema import fb
from teflon_py.tflite.translate.common import register_empty
from teflon_py.tflite.translate.registry import Source, parses, writes

register_empty({"HASHTABLE_LOOKUP": None})


@parses("LSH_PROJECTION")
def parse_lsh(src: Source) -> LshAttrs:
    kind = int(src.option(LSHProjectionOptions).type)
    if kind not in (fb.LSHProjectionType.SPARSE, fb.LSHProjectionType.DENSE):
        raise src.fail(f"unknown LSH projection type {kind}")
    return LshAttrs(dense=kind == fb.LSHProjectionType.DENSE)


@writes("LSH_PROJECTION")
def write_lsh(attrs: LshAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    if not attrs.dense and not attrs.offset:  # NNAPI's SPARSE_DEPRECATED
        raise UnsupportedError(f"{op.describe()}: a sparse projection without offsets has no TFLite options")
    kind = fb.LSHProjectionType.DENSE if attrs.dense else fb.LSHProjectionType.SPARSE
    return LSHProjectionOptions(type=kind)
