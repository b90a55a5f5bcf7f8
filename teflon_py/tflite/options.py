"""Builtin operator options as frozen dataclasses, derived once from the generated schema.

Every ``XxxOptions`` table of the schema becomes a frozen dataclass ``XxxOptions`` whose fields
are the table's fields in snake_case (``stride_w``, ``fused_activation_function``), with schema
defaults. ``padding`` and ``fused_activation_function`` are typed as ``ir.Padding`` and
``ir.Activation``; vectors become tuples. The reader decodes through ``decode``; the builder
encodes through ``encode``.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.tflite.schema import fb

_ENUM_FIELDS = {"padding": ir.Padding, "fused_activation_function": ir.Activation}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _freeze(name: str, value: Any) -> Any:
    if isinstance(value, (list, np.ndarray)):
        return tuple(value.tolist() if isinstance(value, np.ndarray) else value)
    if name in _ENUM_FIELDS and isinstance(value, int):
        try:
            return _ENUM_FIELDS[name](value)
        except ValueError:
            return value
    return value


def _make_dataclass(table: str, obj_cls: type) -> type:
    defaults = obj_cls()
    fields = [
        (_snake(attr), Any, dataclasses.field(default=_freeze(_snake(attr), value)))
        for attr, value in vars(defaults).items()
    ]
    cls = dataclasses.make_dataclass(table, fields, frozen=True)
    cls._schema_names = {_snake(attr): attr for attr in vars(defaults)}
    cls.__module__ = __name__
    cls.__doc__ = f"Decoded ``{table}`` table of the TFLite schema."
    return cls


def _union_members(union: type) -> dict[int, str]:
    return {v: k for k, v in vars(union).items() if not k.startswith("_") and isinstance(v, int)}


#: union type code -> options table name, for BuiltinOptions and BuiltinOptions2.
BUILTIN_OPTIONS = _union_members(fb.BuiltinOptions)
BUILTIN_OPTIONS_2 = _union_members(fb.BuiltinOptions2)

#: options table name -> frozen dataclass
OPTIONS: dict[str, type] = {}
for _name in list(BUILTIN_OPTIONS.values()) + list(BUILTIN_OPTIONS_2.values()):
    _obj_cls = getattr(fb, _name + "T", None)
    if _obj_cls is not None:
        OPTIONS[_name] = _make_dataclass(_name, _obj_cls)
globals().update(OPTIONS)

_TABLE_OF_CLASS = {cls: name for name, cls in OPTIONS.items()}


def decode(union_type: int, table: Any, second: bool = False) -> Any:
    """Turn a flatbuffer union table into its dataclass (None when the union is empty)."""
    members = BUILTIN_OPTIONS_2 if second else BUILTIN_OPTIONS
    name = members.get(union_type)
    if name is None or name == "NONE" or table is None or name not in OPTIONS:
        return None
    creator = fb.BuiltinOptions2Creator if second else fb.BuiltinOptionsCreator
    obj = creator(union_type, table)
    if obj is None:
        return None
    cls = OPTIONS[name]
    return cls(**{_snake(k): _freeze(_snake(k), v) for k, v in vars(obj).items()})


def union_type_of(options: Any) -> tuple[int, bool]:
    """(union type code, is BuiltinOptions2) of an options dataclass instance."""
    name = _TABLE_OF_CLASS[type(options)]
    if name in vars(fb.BuiltinOptions):
        return getattr(fb.BuiltinOptions, name), False
    return getattr(fb.BuiltinOptions2, name), True


def encode(options: Any) -> Any:
    """An options dataclass as the generated object-API ``...T`` instance, ready to Pack."""
    name = _TABLE_OF_CLASS[type(options)]
    obj = getattr(fb, name + "T")()
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if isinstance(value, tuple):
            value = list(value)
        setattr(obj, type(options)._schema_names[f.name], int(value) if isinstance(value, (ir.Padding, ir.Activation)) else value)
    return obj
