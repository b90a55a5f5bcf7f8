"""The op layer's contract, checked over the whole package: every operator the project runs has
its attributes, inference and TFLite translation; nothing outside ``teflon_py/tflite`` reads
TFLite's option tables; every OpenCL lowering registers through the one path."""
from __future__ import annotations

import ast
from pathlib import Path

import teflon_py
from teflon_py import ops
from teflon_py.fallback.registry import KERNELS
from teflon_py.tflite import translate
from teflon_py.tflite.schema import fb

PACKAGE = Path(teflon_py.__file__).parent
BUILTINS = set(vars(fb.BuiltinOperator))
#: ops only another frontend produces (ExecuTorch's XNNPACK qd8): no TFLite operator to translate
NOT_TFLITE = {"DYNAMIC_QUANTIZE", "DYNAMIC_FULLY_CONNECTED", "DYNAMIC_CONV_2D"}
#: ops only the NNAPI frontend produces: NNAPI operations TFLite has no builtin for
NNAPI_ONLY = {"RANDOM_MULTINOMIAL"}


def test_every_fallback_op_has_attrs_inference_and_translators() -> None:
    missing = {name: [what for what, table in (("op layer", ops.OPS), ("parser", translate.PARSERS),
                                               ("writer", translate.WRITERS)) if name not in table]
               for name, kernel in KERNELS.items()
               if kernel.__module__.startswith("teflon_py.fallback.") and name not in NOT_TFLITE | NNAPI_ONLY}
    missing = {name: what for name, what in missing.items() if what}
    assert not missing, f"ops without their op-layer definition or TFLite translators: {missing}"
    translate_source = (PACKAGE / "executorch" / "xnnpack" / "translate.py").read_text()
    assert all(f'"{name}"' in translate_source for name in NOT_TFLITE), "NOT_TFLITE ops no frontend produces"
    assert NOT_TFLITE <= set(ops.OPS)
    nnapi_source = "".join(p.read_text() for p in (PACKAGE / "nnapi" / "operations").glob("*.py"))
    assert all(f'"{name}"' in nnapi_source and name not in BUILTINS for name in NNAPI_ONLY), \
        "NNAPI_ONLY ops the NNAPI frontend does not produce, or TFLite builtins"
    assert NNAPI_ONLY <= set(ops.OPS)
    no_infer = sorted(name for name, d in ops.OPS.items() if d.infer is None)
    assert not no_infer, f"ops without shape inference: {no_infer}"


def test_parsers_return_op_layer_attrs() -> None:
    """A parser's result is an instance of the attributes type its op defines."""
    from teflon_py.tflite import options as tflite_options

    assert not set(ops.OPS) - set(KERNELS) - BUILTINS, "op-layer definitions of unknown ops"
    for name, d in ops.OPS.items():
        assert d.attrs.__module__.startswith("teflon_py.ops"), f"{name}: attrs type {d.attrs} is not the op layer's"
        assert d.attrs not in vars(tflite_options).values()


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_only_the_tflite_frontend_reads_tflite_options() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "tflite" or rel.name == "zoo.py":  # the frontend; zoo builds .tflite files
            continue
        bad = {m for m in _imports(path) if m.startswith(("teflon_py.tflite.options", "teflon_py.tflite.schema"))}
        if bad:
            offenders.append(f"{rel}: {sorted(bad)}")
    assert not offenders, "modules outside teflon_py/tflite reading TFLite tables:\n" + "\n".join(offenders)


def test_every_opencl_lowering_uses_the_one_registration_path() -> None:
    from teflon_py.opencl import registry
    from teflon_py.opencl.lowerings import LOWERINGS

    assert not hasattr(registry, "lowering"), "the old registration decorator is back"
    for op, kinds in LOWERINGS.items():
        for kind, low in kinds.items():
            assert low.emit.__module__.startswith("teflon_py.opencl.lowerings."), (op, kind, low.emit.__module__)
