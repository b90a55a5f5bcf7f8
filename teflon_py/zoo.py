"""Demo networks made with the builder: MobileNet V1/V2-shaped graphs with seeded random weights.

Every network is written once as a sequence of layer calls on ``_Net``, which emits either the
float32 model or its full-integer int8 twin from the same weights: per-channel symmetric int8
weights (dimension 0 for CONV_2D and FULLY_CONNECTED, 3 for DEPTHWISE_CONV_2D), int32 biases at
``input_scale * weight_scale``, and activation scales calibrated by running the float model on
random images in [-1, 1] through teflon-py's NumPy fallback (min/max with 10% headroom, rounded
outward to 1/64), so no layer saturates. ``io`` picks the int8 model's edges: int8 tensors, or uint8 / float32 ones
with QUANTIZE / DEQUANTIZE ops at the input and the output.

The weights are random, so the classes mean nothing: these models exist to exercise and time the
runtime on realistic graph shapes, not to classify.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, quantization

Ranges = dict[str, tuple[float, float]]
INPUT_RANGE = (-1.0, 1.0)  # the images these networks expect (MobileNet preprocessing)
_CALIBRATION_IMAGES = 4
_RANGE_GRID = 64.0  # calibrated ranges get 10% headroom each side, rounded outward to 1/64
_HEADROOM = 0.1


class _Net:
    """Emits a network layer by layer as float32 (``ranges`` None) or int8 (calibrated ``ranges``)."""

    def __init__(self, name: str, seed: int, ranges: Ranges | None = None, io: str = "int8"):
        self.mb = ModelBuilder(f"teflon-py zoo: {name}")
        self.g = self.mb.main
        self.rng = np.random.default_rng(seed)
        self.ranges = ranges
        self.io = io
        self.dtype = np.dtype(np.int8) if ranges is not None else np.dtype(np.float32)

    @property
    def quantized(self) -> bool:
        return self.ranges is not None

    def shape(self, t: int) -> tuple[int, ...]:
        return self.g.graph.tensors[t].shape

    def qparams(self, t: int) -> ir.Quantization | None:
        return self.g.graph.tensors[t].quantization

    # -- tensors --------------------------------------------------------------------------
    def _activation(self, name: str, shape: tuple[int, ...], quant: ir.Quantization | None = None) -> int:
        """An activation tensor; int8 ones take ``quant`` or their calibrated range."""
        if self.quantized and quant is None:
            quant = _range_quantization(self.ranges[name])
        return self.g.add_tensor(name, shape, self.dtype, quantization=quant if self.quantized else None)

    def input(self, shape: tuple[int, ...], name: str = "input") -> int:
        """The graph input, with a QUANTIZE after it when an int8 model has uint8/float32 edges."""
        if not self.quantized:
            return self.g.add_input(name, shape, np.float32)
        q = _range_quantization(INPUT_RANGE)
        if self.io == "int8":
            return self.g.add_input(name, shape, np.int8, quantization=q)
        if self.io == "uint8":
            edge = self.g.add_input(name, shape, np.uint8, quantization=quantization(q.scale, q.zero_point + 128))
        else:
            edge = self.g.add_input(name, shape, np.float32)
        x = self.g.add_tensor(f"{name}/int8", shape, np.int8, quantization=q)
        self.g.add_op("QUANTIZE", [edge], [x])
        return x

    def output(self, x: int, name: str = "output") -> None:
        """Mark ``x`` as the graph output (through QUANTIZE/DEQUANTIZE for uint8/float32 edges) and
        add the ``serving_default`` signature {"input"} -> {"output"}, as converted models have."""
        out = x
        if self.quantized and self.io != "int8":
            q = self.qparams(x)
            if self.io == "uint8":
                uq = quantization(q.scale, q.zero_point + 128)
                out = self.g.add_tensor(name, self.shape(x), np.uint8, quantization=uq)
                self.g.add_op("QUANTIZE", [x], [out])
            else:
                out = self.g.add_tensor(name, self.shape(x), np.float32)
                self.g.add_op("DEQUANTIZE", [x], [out])
        self.g.mark_outputs(out)
        self.mb.add_signature("serving_default", {"input": self.g.graph.inputs[0]}, {"output": out})

    def _weights(self, name: str, w: np.ndarray, b: np.ndarray, x: int, channel_dim: int) -> tuple[int, int]:
        """Weight and bias constants: float32 as drawn, or int8 per-channel + int32 bias."""
        if not self.quantized:
            return (self.g.add_constant(f"{name}/weights", w.astype(np.float32)),
                    self.g.add_constant(f"{name}/bias", b.astype(np.float32)))
        axes = tuple(a for a in range(w.ndim) if a != channel_dim)
        w_scale = np.maximum(np.abs(w).max(axis=axes), 1e-8).astype(np.float32) / np.float32(127)
        bshape = [1] * w.ndim
        bshape[channel_dim] = -1
        qw = np.clip(np.round(w / w_scale.reshape(bshape)), -127, 127).astype(np.int8)
        b_scale = (np.float32(self.qparams(x).scale[0]) * w_scale).astype(np.float32)
        qb = np.round(b / b_scale).astype(np.int32)
        wt = self.g.add_constant(f"{name}/weights", qw, quantization=quantization(w_scale, 0, channel_dim))
        bt = self.g.add_constant(f"{name}/bias", qb, quantization=quantization(b_scale, 0, 0))
        return wt, bt

    # -- layers ---------------------------------------------------------------------------
    def conv(self, x: int, name: str, channels: int, kernel: int = 1, stride: int = 1,
             act: ir.Activation = ir.Activation.RELU6) -> int:
        """CONV_2D, SAME padding, He-initialised weights, small biases (a folded batch norm)."""
        n, h, w, c = self.shape(x)
        gain = 2.0 if act != ir.Activation.NONE else 1.0
        weights = self.rng.standard_normal((channels, kernel, kernel, c)) * np.sqrt(gain / (kernel * kernel * c))
        bias = self.rng.standard_normal(channels) * 0.05
        wt, bt = self._weights(name, weights, bias, x, 0)
        y = self._activation(name, (n, -(-h // stride), -(-w // stride), channels))
        opts = O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=stride, stride_h=stride,
                               fused_activation_function=act, dilation_w_factor=1, dilation_h_factor=1)
        self.g.add_op("CONV_2D", [x, wt, bt], [y], opts)
        return y

    def depthwise(self, x: int, name: str, stride: int = 1, act: ir.Activation = ir.Activation.RELU6) -> int:
        """DEPTHWISE_CONV_2D 3x3, depth multiplier 1, SAME padding."""
        n, h, w, c = self.shape(x)
        weights = self.rng.standard_normal((1, 3, 3, c)) * np.sqrt(2.0 / 9.0)
        bias = self.rng.standard_normal(c) * 0.05
        wt, bt = self._weights(name, weights, bias, x, 3)
        y = self._activation(name, (n, -(-h // stride), -(-w // stride), c))
        opts = O.DepthwiseConv2DOptions(padding=ir.Padding.SAME, stride_w=stride, stride_h=stride, depth_multiplier=1,
                                        fused_activation_function=act, dilation_w_factor=1, dilation_h_factor=1)
        self.g.add_op("DEPTHWISE_CONV_2D", [x, wt, bt], [y], opts)
        return y

    def add(self, a: int, b: int, name: str) -> int:
        """Residual ADD (int8: each side rescaled to the output scale)."""
        y = self._activation(name, self.shape(a))
        self.g.add_op("ADD", [a, b], [y], O.AddOptions(fused_activation_function=ir.Activation.NONE))
        return y

    def average_pool(self, x: int, name: str) -> int:
        """Global AVERAGE_POOL_2D -> [N, 1, 1, C]; int8 keeps the input's scale, as TFLite requires."""
        n, h, w, c = self.shape(x)
        y = self._activation(name, (n, 1, 1, c), self.qparams(x))
        opts = O.Pool2DOptions(padding=ir.Padding.VALID, stride_w=1, stride_h=1, filter_width=w, filter_height=h,
                               fused_activation_function=ir.Activation.NONE)
        self.g.add_op("AVERAGE_POOL_2D", [x], [y], opts)
        return y

    def mean(self, x: int, name: str) -> int:
        """Global average by MEAN over H and W -> [N, C] (int8: rescaled to its own range)."""
        n, _, _, c = self.shape(x)
        axes = self.g.add_constant(f"{name}/axes", np.array([1, 2], np.int32))
        y = self._activation(name, (n, c))
        self.g.add_op("MEAN", [x, axes], [y], O.ReducerOptions(keep_dims=False))
        return y

    def reshape(self, x: int, name: str, shape: tuple[int, ...]) -> int:
        new_shape = self.g.add_constant(f"{name}/shape", np.array(shape, np.int32))
        y = self._activation(name, shape, self.qparams(x))
        self.g.add_op("RESHAPE", [x, new_shape], [y], O.ReshapeOptions(new_shape=tuple(shape)))
        return y

    def fully_connected(self, x: int, name: str, units: int, gain: float = 4.0) -> int:
        """FULLY_CONNECTED classifier, no activation: the logits (``gain`` sets their spread)."""
        n, c = self.shape(x)
        weights = self.rng.standard_normal((units, c)) * np.sqrt(gain / c)
        bias = self.rng.standard_normal(units) * 0.05
        wt, bt = self._weights(name, weights, bias, x, 0)
        y = self._activation(name, (n, units))
        opts = O.FullyConnectedOptions(fused_activation_function=ir.Activation.NONE, keep_num_dims=False)
        self.g.add_op("FULLY_CONNECTED", [x, wt, bt], [y], opts)
        return y

    def softmax(self, x: int, name: str) -> int:
        """SOFTMAX; int8 output fixed at scale 1/256, zero point -128 (TFLite's requirement)."""
        y = self._activation(name, self.shape(x), quantization(1.0 / 256.0, -128))
        self.g.add_op("SOFTMAX", [x], [y], O.SoftmaxOptions(beta=1.0))
        return y

    def build(self) -> bytes:
        return self.mb.build()


def _range_quantization(r: tuple[float, float]) -> ir.Quantization:
    """Asymmetric int8 parameters covering ``r`` (always including 0), TFLite's converter style."""
    lo, hi = min(float(r[0]), 0.0), max(float(r[1]), 0.0)
    scale = max(hi - lo, 1e-6) / 255.0
    zero_point = int(np.clip(np.floor(-128.0 - lo / scale + 0.5), -128, 127))
    return quantization(scale, zero_point)


def make_divisible(value: float, divisor: int = 8) -> int:
    """MobileNet V2's channel rounding: nearest multiple of ``divisor``, never 10% below."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


# -- architectures (one function each, called with a float or an int8 _Net) -------------------
def _mobilenet_v1_layers(net: _Net, input_size: int, alpha: float, num_classes: int) -> None:
    x = net.input((1, input_size, input_size, 3))
    x = net.conv(x, "conv1", max(8, int(32 * alpha)), kernel=3, stride=2)
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for k, (channels, stride) in enumerate(blocks, 1):
        x = net.depthwise(x, f"block{k}/depthwise", stride)
        x = net.conv(x, f"block{k}/pointwise", max(8, int(channels * alpha)))
    x = net.average_pool(x, "pool")
    x = net.reshape(x, "flatten", (1, net.shape(x)[-1]))
    x = net.fully_connected(x, "logits", num_classes, gain=64.0)
    net.output(net.softmax(x, "probabilities"))


_V2_BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def _mobilenet_v2_layers(net: _Net, input_size: int, alpha: float, num_classes: int) -> None:
    x = net.input((1, input_size, input_size, 3))
    x = net.conv(x, "conv1", make_divisible(32 * alpha), kernel=3, stride=2)
    k = 0
    for expansion, channels, repeats, first_stride in _V2_BLOCKS:
        out_channels = make_divisible(channels * alpha)
        for r in range(repeats):
            k += 1
            stride = first_stride if r == 0 else 1
            x = _inverted_residual(net, x, f"block{k}", expansion, out_channels, stride)
    last = make_divisible(1280 * alpha) if alpha > 1.0 else 1280
    x = net.conv(x, "conv_last", last)
    x = net.mean(x, "pool")
    x = net.fully_connected(x, "logits", num_classes)
    net.output(net.softmax(x, "probabilities"))


def _inverted_residual(net: _Net, x: int, name: str, expansion: int, out_channels: int, stride: int) -> int:
    """Expand 1x1 (RELU6), depthwise 3x3 (RELU6), project 1x1 (linear), residual ADD when shapes allow."""
    in_channels = net.shape(x)[-1]
    y = net.conv(x, f"{name}/expand", in_channels * expansion) if expansion != 1 else x
    y = net.depthwise(y, f"{name}/depthwise", stride)
    y = net.conv(y, f"{name}/project", out_channels, act=ir.Activation.NONE)
    if stride == 1 and in_channels == out_channels:
        y = net.add(x, y, f"{name}/add")
    return y


def _demo_layers(net: _Net, input_size: int, alpha: float, num_classes: int) -> None:
    x = net.input((1, input_size, input_size, 3))
    x = net.conv(x, "conv1", 16, kernel=3, stride=2)
    x = _inverted_residual(net, x, "block1", 1, 16, 1)
    x = _inverted_residual(net, x, "block2", 4, 24, 2)
    x = _inverted_residual(net, x, "block3", 4, 24, 1)
    x = net.mean(x, "pool")
    x = net.fully_connected(x, "logits", num_classes)
    net.output(net.softmax(x, "probabilities"))


Layers = Callable[[_Net, int, float, int], None]


def _build(name: str, layers: Layers, input_size: int, alpha: float, num_classes: int, dtype: str,
           io: str | None, seed: int) -> bytes:
    """The float model, or the int8 one calibrated on the float model's activations."""
    if dtype not in ("float32", "int8"):
        raise ValueError(f"dtype must be 'float32' or 'int8', not {dtype!r}")
    for what, value in (("input_size", input_size), ("num_classes", num_classes)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{what} must be a positive integer, got {value!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha!r}")
    io = io or dtype
    if io not in ("int8", "uint8", "float32") or (dtype == "float32" and io != "float32"):
        raise ValueError(f"io {io!r} does not fit a {dtype} model (float32 models have float32 edges)")
    net = _Net(name, seed)
    layers(net, input_size, alpha, num_classes)
    model = net.build()
    if dtype == "float32":
        return model
    ranges = calibrate(model, seed)
    qnet = _Net(name, seed, ranges, io)
    layers(qnet, input_size, alpha, num_classes)
    return qnet.build()


def calibrate(model: bytes, seed: int = 0, images: int = _CALIBRATION_IMAGES) -> Ranges:
    """Per tensor name: (min, max) over random images in [-1, 1], computed by the NumPy fallback."""
    from teflon_py.interpreter import Interpreter

    it = Interpreter(model_content=model)
    it.allocate_tensors()
    (detail,) = it.get_input_details()
    rng = np.random.default_rng(seed + 1)
    ranges: dict[str, tuple[float, float]] = {}
    tensors = [d for d in it.get_tensor_details() if d["dtype"] == np.float32]
    for _ in range(images):
        it.set_tensor(detail["index"], rng.uniform(*INPUT_RANGE, size=tuple(detail["shape"])).astype(np.float32))
        it.invoke()
        for d in tensors:
            v = it.get_tensor(d["index"])
            lo, hi = ranges.get(d["name"], (np.inf, -np.inf))
            ranges[d["name"]] = (min(lo, float(v.min())), max(hi, float(v.max())))
    out = {}
    for k, (lo, hi) in ranges.items():
        margin = _HEADROOM * (hi - lo)
        out[k] = (float(np.floor((lo - margin) * _RANGE_GRID) / _RANGE_GRID),
                  float(np.ceil((hi + margin) * _RANGE_GRID) / _RANGE_GRID))
    return out


# -- public builders ---------------------------------------------------------------------------
def mobilenet_v1(input_size: int = 96, alpha: float = 0.5, num_classes: int = 1000, *, dtype: str = "float32",
                 io: str | None = None, seed: int = 0) -> bytes:
    """MobileNet V1: 3x3/2 stem, 13 depthwise-separable blocks, average pool, FC, softmax.

    ``dtype`` "float32" or "int8"; ``io`` (int8 models) "int8", "uint8" or "float32" edges.
    The full network is ``mobilenet_v1(224, 1.0)``.
    """
    return _build("mobilenet_v1", _mobilenet_v1_layers, input_size, alpha, num_classes, dtype, io, seed)


def mobilenet_v2(input_size: int = 96, alpha: float = 0.5, num_classes: int = 1000, *, dtype: str = "float32",
                 io: str | None = None, seed: int = 0) -> bytes:
    """MobileNet V2: 3x3/2 stem, 17 inverted residual blocks, 1x1 conv, MEAN, FC, softmax.

    Same arguments as ``mobilenet_v1``; the full network is ``mobilenet_v2(224, 1.0)``.
    """
    return _build("mobilenet_v2", _mobilenet_v2_layers, input_size, alpha, num_classes, dtype, io, seed)


def demo(input_size: int = 32, num_classes: int = 10, *, dtype: str = "float32", io: str | None = None,
         seed: int = 0) -> bytes:
    """A small classifier (stem, three inverted residual blocks, MEAN, FC, softmax) for ``teflon-py run``."""
    return _build("demo", _demo_layers, input_size, 1.0, num_classes, dtype, io, seed)


#: name -> builder, for ``teflon-py zoo NAME OUT.tflite``
MODELS: dict[str, Callable[..., bytes]] = {"demo": demo, "mobilenet_v1": mobilenet_v1, "mobilenet_v2": mobilenet_v2}


def build(name: str, **kwargs: Any) -> bytes:
    """A zoo model by name (``MODELS``), keyword arguments passed to its builder."""
    if name not in MODELS:
        raise ValueError(f"unknown zoo model {name!r}; available: {', '.join(MODELS)}")
    return MODELS[name](**kwargs)
