"""ExecuTorch's portable operators in NumPy: the kernel calls a method runs between delegate calls.

A ``KernelCall``'s arguments are EValue indices in the operator's schema order (``out``
arguments included), followed by one return value (the ``out`` tensor again, or a TensorList of
the ``out`` tensors). Each kernel here
reads its inputs through ``Args`` and returns its results, which ``run_kernel`` checks against
the shapes and dtypes the program declares and stores. Covered: what ExecuTorch's XNNPACK
partitioner leaves behind in convolutional and transformer exports (layer norm, means, copies and
views, comparisons and selects, scalar arithmetic). Any other operator is an ``UnsupportedError``
naming it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from teflon_py.errors import ModelError, UnsupportedError
from teflon_py.executorch.program import KernelCall, TensorValue, Value

#: ScalarType codes an operator's ``dtype`` argument may carry
_SCALAR_DTYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 5: np.float16,
                  6: np.float32, 7: np.float64, 11: np.bool_}


class Args:
    """A kernel call's arguments: ``tensor(k)``, ``scalar(k)``, ``ints(k)`` read argument k."""

    def __init__(self, call: KernelCall, spec: Sequence[Value], values: list[Any], label: str):
        self.call, self.spec, self.values, self.label = call, spec, values, label

    def __len__(self) -> int:
        return len(self.call.args)

    def error(self, message: str) -> ModelError:
        return ModelError(f"{self.label}: {message}")

    def value(self, k: int) -> Any:
        if k >= len(self.call.args):
            raise self.error(f"argument {k} is missing ({len(self.call.args)} arguments)")
        return self.values[self.call.args[k]]

    def tensor(self, k: int) -> np.ndarray:
        v = self.value(k)
        if not isinstance(v, np.ndarray):
            raise self.error(f"argument {k} (value {self.call.args[k]}) is not a computed tensor")
        return v

    def scalar(self, k: int) -> Any:
        v = self.value(k)
        return v.item() if isinstance(v, np.ndarray) and v.size == 1 else v

    def ints(self, k: int) -> tuple[int, ...]:
        """An int list argument (an IntList's items are indices of Int values), or one int."""
        v = self.value(k)
        if v is None:
            return ()
        if isinstance(v, (tuple, list)):
            return tuple(int(self.values[i]) for i in v)
        return (int(v),)

    def tensors(self, k: int) -> list[np.ndarray]:
        v = self.value(k)
        if not isinstance(v, (tuple, list)):
            raise self.error(f"argument {k} is not a tensor list")
        return [self.values[i] for i in v]

    def dtype(self, k: int) -> np.dtype | None:
        v = self.value(k)
        if v is None:
            return None
        if v not in _SCALAR_DTYPES:
            raise UnsupportedError(f"{self.label}: dtype code {v} is not supported")
        return np.dtype(_SCALAR_DTYPES[v])


Kernel = Callable[[Args], "list[np.ndarray]"]
KERNELS: dict[str, Kernel] = {}


def kernel(*names: str) -> Callable[[Kernel], Kernel]:
    def wrap(fn: Kernel) -> Kernel:
        for name in names:
            KERNELS[name] = fn
        return fn
    return wrap


def run_kernel(call: KernelCall, spec: Sequence[Value], values: list[Any], label: str) -> None:
    """Run one kernel call: compute, check against the declared out tensors, store."""
    fn = KERNELS.get(call.name) or KERNELS.get(call.operator)
    if fn is None:
        raise UnsupportedError(f"{label}: portable operator {call.name} is not implemented in teflon-py")
    args = Args(call, spec, values, label)
    results = fn(args)
    # args: the schema's arguments, out arguments last, then one return value (the out tensor,
    # or a TensorList of them)
    if len(call.args) < len(results) + 1:
        raise ModelError(f"{label}: {len(call.args)} arguments cannot hold {len(results)} results")
    outs = call.args[len(call.args) - 1 - len(results):-1]
    for k, (index, result) in enumerate(zip(outs, results)):
        if spec[index].kind == "TensorList":  # an out argument that is a list of tensors
            items = spec[index].value
            if not isinstance(result, list) or len(result) != len(items):
                raise ModelError(f"{label}: result {k} is not the {len(items)} tensors its out list holds")
            for j, (item, part) in enumerate(zip(items, result)):
                _store(values, spec, item, part, f"{label}: result {k}[{j}]")
        else:
            _store(values, spec, index, result, f"{label}: result {k}")


def _store(values: list[Any], spec: Sequence[Value], index: int, result: Any, label: str) -> None:
    declared = spec[index].value
    result = np.asarray(result)
    if isinstance(declared, TensorValue):
        if tuple(result.shape) != declared.sizes:
            raise ModelError(f"{label} has shape {list(result.shape)}, the program declares {list(declared.sizes)}")
        result = result.astype(declared.dtype, copy=False)
    values[index] = np.ascontiguousarray(result)


def _axes(dims: tuple[int, ...], rank: int) -> tuple[int, ...] | None:
    return tuple(d % rank for d in dims) if dims else None


@kernel("aten::mean.out", "aten::mean.dim_out")
def _mean(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    dtype = a.dtype(3) or x.dtype
    return [np.mean(x.astype(np.float64), axis=_axes(a.ints(1), x.ndim), keepdims=bool(a.scalar(2))).astype(dtype)]


@kernel("aten::sum.IntList_out")
def _sum(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    dtype = a.dtype(3) or x.dtype
    return [np.sum(x, axis=_axes(a.ints(1), x.ndim), keepdims=bool(a.scalar(2)), dtype=dtype)]


@kernel("aten::native_layer_norm.out")
def _layer_norm(a: Args) -> list[np.ndarray]:
    x, shape = a.tensor(0), a.ints(1)
    weight, bias, eps = a.value(2), a.value(3), float(a.scalar(4))
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise a.error(f"normalized shape {list(shape)} does not end the input's shape {list(x.shape)}")
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float32)
    var = np.square(x - mean).mean(axis=axes, keepdims=True, dtype=np.float32)
    rstd = (1.0 / np.sqrt(var + np.float32(eps))).astype(np.float32)
    y = (x - mean) * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return [y.astype(x.dtype), mean.astype(x.dtype), rstd.astype(x.dtype)]


@kernel("aten::view_copy.out", "aten::_unsafe_view.out", "aten::reshape.out")
def _view(a: Args) -> list[np.ndarray]:
    x, shape = a.tensor(0), a.ints(1)
    try:
        return [x.reshape(shape)]
    except ValueError as e:
        raise a.error(f"cannot view {list(x.shape)} as {list(shape)}") from e


@kernel("aten::permute_copy.out")
def _permute(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    return [np.transpose(x, [d % x.ndim for d in a.ints(1)])]


@kernel("aten::clone.out", "aten::alias_copy.out", "aten::_to_copy.out", "aten::contiguous.out")
def _clone(a: Args) -> list[np.ndarray]:
    return [a.tensor(0).copy()]


@kernel("aten::expand_copy.out")
def _expand(a: Args) -> list[np.ndarray]:
    x, shape = a.tensor(0), list(a.ints(1))
    lead = len(shape) - x.ndim
    target = [x.shape[k - lead] if s == -1 else s for k, s in enumerate(shape)]
    return [np.broadcast_to(x, target).copy()]


@kernel("aten::cat.out")
def _cat(a: Args) -> list[np.ndarray]:
    xs = [t for t in a.tensors(0) if t.size or t.ndim > 1]
    return [np.concatenate(xs, axis=int(a.scalar(1)) % xs[0].ndim)]


@kernel("aten::select_copy.int_out")
def _select(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    return [np.take(x, int(a.scalar(2)), axis=int(a.scalar(1)) % x.ndim)]


@kernel("aten::slice_copy.Tensor_out")
def _slice(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    dim = int(a.scalar(1)) % x.ndim
    start, end, step = a.scalar(2), a.scalar(3), a.scalar(4)
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return [x[tuple(index)]]


@kernel("aten::unsqueeze_copy.out")
def _unsqueeze(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    return [np.expand_dims(x, int(a.scalar(1)) % (x.ndim + 1))]


@kernel("aten::squeeze_copy.dims_out")
def _squeeze(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    dims = tuple(d % x.ndim for d in a.ints(1) if x.shape[d % x.ndim] == 1)
    return [np.squeeze(x, dims)]


def _binary_scalar(fn: Callable[[Any, Any], Any]) -> Kernel:
    def run(a: Args) -> list[np.ndarray]:
        x, other = a.tensor(0), a.value(1)
        y = fn(x, other)
        return [np.asarray(y).astype(np.result_type(x, np.asarray(other).dtype) if isinstance(other, np.ndarray)
                                     else x.dtype)]
    return run


KERNELS["aten::mul.Scalar_out"] = _binary_scalar(np.multiply)
KERNELS["aten::add.Scalar_out"] = _binary_scalar(np.add)
KERNELS["aten::div.Scalar_out"] = _binary_scalar(np.divide)
KERNELS["aten::mul.out"] = _binary_scalar(np.multiply)
KERNELS["aten::div.out"] = _binary_scalar(np.divide)


@kernel("aten::add.out", "aten::sub.out")
def _add(a: Args) -> list[np.ndarray]:
    x, y, alpha = a.tensor(0), a.value(1), a.scalar(2)
    sign = -1 if a.call.operator == "aten::sub" else 1
    return [np.asarray(x + sign * (alpha if alpha is not None else 1) * y).astype(x.dtype)]


@kernel("aten::eq.Scalar_out", "aten::eq.Tensor_out")
def _eq(a: Args) -> list[np.ndarray]:
    return [np.equal(a.tensor(0), a.value(1))]


@kernel("aten::ne.Scalar_out", "aten::ne.Tensor_out")
def _ne(a: Args) -> list[np.ndarray]:
    return [np.not_equal(a.tensor(0), a.value(1))]


@kernel("aten::logical_not.out")
def _logical_not(a: Args) -> list[np.ndarray]:
    return [np.logical_not(a.tensor(0))]


@kernel("aten::any.out", "aten::any.dims_out", "aten::any.all_out")
def _any(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    if a.call.overload == "all_out":
        return [np.any(x)]
    dims = a.ints(1)
    return [np.any(x, axis=_axes(dims, x.ndim), keepdims=bool(a.scalar(2)))]


@kernel("aten::where.self_out")
def _where(a: Args) -> list[np.ndarray]:
    cond, x, y = a.tensor(0), a.value(1), a.value(2)
    return [np.where(cond, x, y)]


@kernel("aten::full_like.out")
def _full_like(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    dtype = a.dtype(2) or x.dtype
    return [np.full(x.shape, a.scalar(1), dtype)]


@kernel("aten::full.out")
def _full(a: Args) -> list[np.ndarray]:
    return [np.full(a.ints(0), a.scalar(1), np.float32)]


@kernel("aten::_softmax.out")
def _softmax(a: Args) -> list[np.ndarray]:
    x, dim = a.tensor(0), int(a.scalar(1))
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return [(e / e.sum(axis=dim, keepdims=True)).astype(x.dtype)]


@kernel("aten::split_with_sizes_copy.out", "aten::split_copy.Tensor_out")
def _split(a: Args) -> list[list[np.ndarray]]:
    x, dim = a.tensor(0), int(a.scalar(2)) % a.tensor(0).ndim
    if a.call.operator == "aten::split_copy":
        step = int(a.scalar(1))
        sizes = [min(step, x.shape[dim] - s) for s in range(0, x.shape[dim], step)]
    else:
        sizes = list(a.ints(1))
    if sum(sizes) != x.shape[dim]:
        raise a.error(f"split sizes {sizes} do not add up to dimension {dim} of {list(x.shape)}")
    return [np.split(x, np.cumsum(sizes)[:-1], axis=dim)]


@kernel("aten::cumsum.out")
def _cumsum(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    dtype = a.dtype(2) or x.dtype
    return [np.cumsum(x, axis=int(a.scalar(1)) % max(x.ndim, 1), dtype=dtype)]


@kernel("dim_order_ops::_to_dim_order_copy.out", "dim_order_ops::_clone_dim_order.out")
def _to_dim_order(a: Args) -> list[np.ndarray]:
    """A copy into another memory order (and dtype, which ``run_kernel`` casts to): values here
    are logical arrays, so the copy is the identity."""
    return [a.tensor(0).copy()]


@kernel("aten::_log_softmax.out")
def _log_softmax(a: Args) -> list[np.ndarray]:
    x, dim = a.tensor(0), int(a.scalar(1))
    shifted = x - x.max(axis=dim, keepdims=True)
    return [(shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))).astype(x.dtype)]


@kernel("aten::amax.out", "aten::amin.out")
def _amax(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    fn = np.max if a.call.operator == "aten::amax" else np.min
    return [fn(x, axis=_axes(a.ints(1), x.ndim), keepdims=bool(a.scalar(2)))]


@kernel("aten::mm.out", "aten::bmm.out")
def _mm(a: Args) -> list[np.ndarray]:
    x, y = a.tensor(0), a.tensor(1)
    return [np.matmul(x, y, dtype=np.float64).astype(x.dtype) if x.dtype.kind == "f" else np.matmul(x, y)]


@kernel("aten::elu.out")
def _elu(a: Args) -> list[np.ndarray]:
    x = a.tensor(0)
    alpha, scale, input_scale = (np.float32(a.scalar(k)) for k in (1, 2, 3))
    negative = np.expm1(x * input_scale) * alpha * scale
    return [np.where(x > 0, x * scale, negative).astype(x.dtype)]


@kernel("aten::_adaptive_avg_pool2d.out")
def _adaptive_avg_pool2d(a: Args) -> list[np.ndarray]:
    """PyTorch's adaptive windows: [floor(i * in / out), ceil((i + 1) * in / out)) per axis."""
    x = a.tensor(0)
    oh, ow = a.ints(1)
    ih, iw = x.shape[-2:]
    out = np.empty((*x.shape[:-2], oh, ow), x.dtype)
    for i in range(oh):
        h0, h1 = (i * ih) // oh, -(-((i + 1) * ih) // oh)
        for j in range(ow):
            w0, w1 = (j * iw) // ow, -(-((j + 1) * iw) // ow)
            out[..., i, j] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1), dtype=np.float64)
    return [out]


@kernel("aten::upsample_nearest2d.vec_out", "aten::upsample_nearest2d.out")
def _upsample_nearest2d(a: Args) -> list[np.ndarray]:
    """PyTorch's nearest: source index min(floor(dst * scale), in - 1), scale = 1 / scale factor
    (or in / out for an output size)."""
    x = a.tensor(0)
    ih, iw = x.shape[-2:]
    size = a.ints(1)
    factors = a.value(2) if len(a) > 4 else None
    if size:
        oh, ow = size
        scales = (np.float32(ih / oh), np.float32(iw / ow))
    elif factors:
        oh, ow = int(ih * factors[0]), int(iw * factors[1])
        scales = (np.float32(1.0 / factors[0]), np.float32(1.0 / factors[1]))
    else:
        raise a.error("neither an output size nor scale factors")
    rows = np.minimum(np.floor(np.arange(oh, dtype=np.float32) * scales[0]).astype(np.int64), ih - 1)
    cols = np.minimum(np.floor(np.arange(ow, dtype=np.float32) * scales[1]).astype(np.int64), iw - 1)
    return [x[..., rows[:, None], cols[None, :]]]
