"""The ``.pte`` and XNNPACK payload readers are strict: every truncation and a catalogue of
targeted corruptions are a ``ModelError`` that names what is wrong; random byte flips read as a
program or fail with a ``TeflonError``, never with anything else."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teflon_py.errors import ModelError, TeflonError
from teflon_py.executorch import Runtime
from teflon_py.executorch.program import read_program

FIXTURES = Path(__file__).parent / "fixtures" / "executorch"
#: a convolution (constants in named data), an int8 convolution (per-channel scale buffers), and
#: a program of two delegate calls with portable kernels between them
SEEDS = ["conv2d", "q8_conv2d", "net_split_layernorm_fp32"]


def seed(name: str) -> bytes:
    return (FIXTURES / f"{name}.pte").read_bytes()


def load(data: bytes):
    method = Runtime.get().load_program(data).load_method("forward")
    return method


def assert_error(data: bytes, *words: str) -> None:
    with pytest.raises(ModelError) as info:
        load(data)
    for w in words:
        assert w in str(info.value), f"{w!r} not in: {info.value}"


@pytest.mark.parametrize("name", SEEDS)
def test_truncated_at_every_cut_point(name: str) -> None:
    data = seed(name)
    for cut in range(len(data) - 1, -1, -1):
        with pytest.raises(ModelError):
            load(data[:cut])


def test_not_a_program() -> None:
    data = bytearray(seed("conv2d"))
    data[4:8] = b"TFL3"
    assert_error(bytes(data), "not an ExecuTorch program", "TFL3")
    assert_error(b"", "0 bytes")


def _header(data: bytes) -> tuple[int, int, int, int]:
    return struct.unpack_from("<IQQQ", data, 12)


def test_extended_header_checks() -> None:
    data = bytearray(seed("conv2d"))
    _length, _program_size, _base, size = _header(data)
    bad = bytearray(data)
    struct.pack_into("<I", bad, 12, 8)
    assert_error(bytes(bad), "extended header length 8")
    bad = bytearray(data)
    struct.pack_into("<Q", bad, 16, len(data) + 1)
    assert_error(bytes(bad), "program_size")
    bad = bytearray(data)
    struct.pack_into("<Q", bad, 32, size + 4096)
    assert_error(bytes(bad), "segment data")


def _named_payload_fields(data: bytes) -> dict:
    """Where the fixture's pieces are, read with our own reader (for targeted corruption)."""
    program = read_program(data)
    return {"program": program}


def test_named_data_key_missing() -> None:
    data = seed("conv2d")
    program = read_program(data)
    key = next(iter(program.named_data))
    pos = data.find(key.encode())
    assert pos > 0
    damaged = data[:pos] + b"X" + data[pos + 1:]  # the program's key no longer matches the payload's
    with pytest.raises(ModelError, match="not in the program's named data"):
        load(damaged)


def test_payload_identifier_and_header() -> None:
    data = seed("conv2d")
    pos = data.find(b"XH00")
    assert pos > 0
    bad = bytearray(data)
    bad[pos + 10:pos + 14] = struct.pack("<I", 1 << 30)  # flatbuffer size (header bytes 14..18)
    assert_error(bytes(bad), "delegate 0", "XNNPACK flatbuffer")
    xn = data.find(b"XN01")
    bad = bytearray(data)
    bad[xn:xn + 4] = b"ZZ99"
    assert_error(bytes(bad), "delegate 0", "not an XNNPACK graph")


def test_input_of_the_wrong_shape_names_the_input() -> None:
    method = load(seed("conv2d"))
    shape = method.inputs[0].shape
    with pytest.raises(ModelError, match=r"input 0 must be float32"):
        method.execute([np.zeros((1, *shape), np.float32)])
    with pytest.raises(ModelError, match="takes 1 inputs, got 2"):
        method.execute([np.zeros(shape, np.float32)] * 2)


def test_unknown_method_names_the_methods() -> None:
    with pytest.raises(ModelError, match="no method 'backward'.*forward"):
        Runtime.get().load_program(seed("conv2d")).load_method("backward")


_SEEDS = {name: seed(name) for name in SEEDS}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(SEEDS), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                                    min_size=1, max_size=6))
def test_random_byte_flips_never_crash(which: str, flips: list[tuple[int, int]]) -> None:
    """Any damage reads as a program (that runs or fails cleanly) or raises a TeflonError."""
    data = bytearray(_SEEDS[which])
    for pos, value in flips:
        data[pos % len(data)] = value
    try:
        method = load(bytes(data))
        method.execute([np.zeros(t.shape, t.dtype) for t in method.inputs])
    except TeflonError:
        return
