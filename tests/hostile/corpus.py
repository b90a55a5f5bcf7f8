"""A seeded, deterministic corpus of malformed models, and a runner that loads each the way LiteRT's
fuzzers do: load, ``allocate_tensors``, zero inputs, ``invoke``, read the outputs, each file in a
worker process under a 4 GiB address-space limit and a time limit.

Seeds: zoo models (float32, int8, external buffers), builder models (int8 convolutions, a WHILE
loop, a float graph of conv / reshape / fully connected / softmax) and ExecuTorch programs with
XNNPACK payloads. Every mutation is aimed with the schema: a walk over the valid seed
(``trace``) finds where its offsets, vector lengths, vtables, scalar fields, index vectors and
shapes lie, so each fault class hits what it names.

Outcome per file: ``ok`` (ran), ``clean`` (a ``ModelError`` or ``UnsupportedError``), ``other``
(any other exception type escaped), ``crash`` (the worker died), ``hang`` (past the time limit);
the table also gives the slowest clean error per class.

    python -m tests.hostile.corpus --full          # every class x seed x 40 variants, the table
    python -m tests.hostile.corpus --sample 150    # what CI runs (tests/hostile/test_corpus.py)
    python -m tests.hostile.corpus --full --held-out           # the same faults in other models
    python -m tests.hostile.corpus --full --backend opencl     # with the OpenCL delegate
"""
from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import random
import resource
import select
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
MEMORY_LIMIT = 4 << 30
TIME_LIMIT_S = 60.0
CLASSES = ("bitflip", "truncate", "offset", "length", "vtable", "scalar", "index", "shape")
PTE_SEEDS = ("conv2d", "conv_add_relu", "add_broadcast", "depthwise_conv2d")
#: ``--held-out``: other models, the same fault classes (does the hardening generalise?)
HELD_OUT_PTE = ("max_pool2d", "linear", "cat3", "mean_hw", "softmax", "upsample_bilinear", "permute", "bmm")

# -- seeds ------------------------------------------------------------------------------------


def _float_graph() -> bytes:
    """CONV_2D -> RESHAPE -> FULLY_CONNECTED -> SOFTMAX, plus a CONCATENATION and a MEAN."""
    from teflon_py import ir
    from teflon_py.tflite import options as O
    from teflon_py.tflite.builder import ModelBuilder

    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 6, 3), np.float32)
    w = g.add_constant("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = g.add_constant("b", rng.standard_normal(4).astype(np.float32))
    c = g.add_tensor("conv", (1, 6, 6, 4), np.float32)
    g.add_op("CONV_2D", [x, w, b], [c], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1,
                                                        fused_activation_function=ir.Activation.RELU))
    r = g.add_tensor("flat", (1, 144), np.float32)
    g.add_op("RESHAPE", [c, g.add_constant("shape", np.array([1, 144], np.int32))], [r])
    fw = g.add_constant("fw", rng.standard_normal((10, 144)).astype(np.float32))
    f = g.add_tensor("fc", (1, 10), np.float32)
    g.add_op("FULLY_CONNECTED", [r, fw, ir.NO_TENSOR], [f], O.FullyConnectedOptions())
    s = g.add_tensor("probs", (1, 10), np.float32)
    g.add_op("SOFTMAX", [f], [s], O.SoftmaxOptions(beta=1.0))
    m = g.add_tensor("mean", (1, 4), np.float32)
    g.add_op("MEAN", [c, g.add_constant("axes", np.array([1, 2], np.int32))], [m], O.ReducerOptions())
    cat = g.add_tensor("cat", (1, 14), np.float32)
    g.add_op("CONCATENATION", [s, m], [cat], O.ConcatenationOptions(axis=1))
    g.mark_outputs(cat)
    return mb.build()


def _held_out_builders() -> dict[str, tuple[str, object]]:
    from teflon_py import zoo

    seeds: dict[str, tuple[str, object]] = {
        "mnv2_f32": ("tflite", lambda: zoo.mobilenet_v2(32, 0.35, 10)),
        "mnv2_int8": ("tflite", lambda: zoo.mobilenet_v2(32, 0.35, 10, dtype="int8", io="uint8")),
        "mnv1_f32_ext": ("tflite", lambda: _external(zoo.mobilenet_v1(32, 0.25, 10))),
    }
    for name in HELD_OUT_PTE:
        if (FIXTURES / f"{name}.pte").exists():
            seeds[f"pte_{name}"] = ("pte", functools.partial((FIXTURES / f"{name}.pte").read_bytes))
    return seeds


SEED_SETS = {"default": None, "held-out": _held_out_builders}
_seed_set = "default"


def use_seeds(which: str) -> None:
    """Switch this process to the ``default`` or the ``held-out`` seeds."""
    global _seed_set
    _seed_set = which
    seeds.cache_clear()
    layouts.cache_clear()


def _seed_builders() -> dict[str, tuple[str, object]]:
    from teflon_py import zoo

    if _seed_set == "held-out":
        return _held_out_builders()

    def two_convs() -> bytes:
        from tests.test_opencl_quantized import _two_convs
        return _two_convs()

    def counter() -> bytes:
        from tests.ops.test_control_flow import counter_model
        return counter_model()

    seeds: dict[str, tuple[str, object]] = {
        "demo_f32": ("tflite", lambda: zoo.demo(16, 10)),
        "demo_int8": ("tflite", lambda: zoo.demo(16, 10, dtype="int8", io="int8")),
        "mnv1_int8": ("tflite", lambda: zoo.mobilenet_v1(32, 0.25, 10, dtype="int8")),
        "demo_ext": ("tflite", lambda: _external(zoo.demo(16, 10))),
        "two_convs": ("tflite", two_convs),
        "while": ("tflite", counter),
        "float_graph": ("tflite", _float_graph),
    }
    for name in PTE_SEEDS:
        seeds[f"pte_{name}"] = ("pte", functools.partial((FIXTURES / f"{name}.pte").read_bytes))
    return seeds


def _external(model: bytes) -> bytes:
    from teflon_py.tflite.builder import write_model
    from teflon_py.tflite.reader import read_model
    return write_model(read_model(model), external_buffers=True)


@functools.cache
def seeds() -> dict[str, tuple[str, bytes]]:
    """Seed name -> (kind, bytes), built once per process."""
    return {name: (kind, build()) for name, (kind, build) in _seed_builders().items()}


# -- where things are: a walk over a valid flatbuffer --------------------------------------------


@dataclass
class Layout:
    """Byte positions in a valid flatbuffer: uoffsets, vector/string length words (with element
    size and count), vtable words, scalar fields (position, size), int32 vector elements (with the
    field's path), shape elements."""

    offsets: list[int]
    lengths: list[tuple[int, int, int]]
    vtables: list[int]
    scalars: list[tuple[int, int]]
    ints: list[tuple[int, str]]
    shapes: list[int]


def trace(data: bytes, schema_path: str, start: int = 0) -> Layout:
    """Walk the (valid) flatbuffer at ``data[start:]`` with its schema and record its layout."""
    from teflon_py import flatbuffer_verifier as fv

    schema = fv.load_schema(schema_path)
    out = Layout([], [], [], [], [], [])
    u32 = struct.Struct("<I").unpack_from

    def follow(at: int) -> int:
        out.offsets.append(at)
        return at + u32(data, at)[0]

    def vector(at: int, elem: int) -> tuple[int, int]:
        v = follow(at)
        n = u32(data, v)[0]
        out.lengths.append((v, elem, n))
        return v + 4, n

    def table(pos: int, tname: str) -> None:
        vt = pos - struct.unpack_from("<i", data, pos)[0]
        vsize = struct.unpack_from("<H", data, vt)[0]
        out.vtables.extend(range(vt, vt + vsize, 2))
        for f in schema.tables[tname]:
            fo = struct.unpack_from("<H", data, vt + f.voffset)[0] if f.voffset < vsize else 0
            if not fo:
                continue
            at = pos + fo
            if f.kind == fv.SCALAR:
                out.scalars.append((at, f.size))
            elif f.kind == fv.VECTOR:
                first, n = vector(at, f.elem)
                if f.elem == 4 and f.name not in ("scale", "data"):
                    for i in range(min(n, 64)):
                        out.ints.append((first + 4 * i, f.name))
                        if f.name in ("shape", "sizes", "dims", "shape_signature"):
                            out.shapes.append(first + 4 * i)
            elif f.kind in (fv.STRING,):
                vector(at, 1)
            elif f.kind == fv.TABLE:
                table(follow(at), f.ref)
            elif f.kind in (fv.VECTOR_TABLE, fv.VECTOR_STRING):
                first, n = vector(at, 4)
                for i in range(n):
                    p = follow(first + 4 * i)
                    if f.kind == fv.VECTOR_TABLE:
                        table(p, f.ref)
                    else:
                        out.lengths.append((p, 1, u32(data, p)[0]))
            else:
                to = struct.unpack_from("<H", data, vt + f.type_voffset)[0]
                table(follow(at), schema.unions[f.ref][data[pos + to]])

    table(follow(start), schema.root)
    return out


@functools.cache
def layouts(name: str) -> list[Layout]:
    """The seed's flatbuffer layouts: the model, or a program and each XNNPACK payload in it."""
    kind, data = seeds()[name]
    if kind == "tflite":
        return [trace(data, str(ROOT / "teflon_py/tflite/schema/schema.fbs"))]
    found = [trace(data, str(ROOT / "teflon_py/executorch/schema/program.fbs"))]
    pos = data.find(b"XN01")
    while pos >= 4:
        found.append(trace(data, str(ROOT / "teflon_py/executorch/schema/xnnpack.fbs"), pos - 4))
        pos = data.find(b"XN01", pos + 1)
    return found


# -- mutations --------------------------------------------------------------------------------

HOSTILE_32 = (0, 1, 2, 3, 4, 7, 255, 256, 65535, 1 << 20, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE)
HOSTILE_DIMS = (0, -1, -2, 2147483647, 1 << 16, 1 << 20, 1 << 28, 3, 192)


def mutate(name: str, fault: str, k: int) -> bytes:
    """Variant ``k`` of seed ``name`` with a fault of class ``fault`` (deterministic)."""
    rng = random.Random(f"{name}/{fault}/{k}")
    data = bytearray(seeds()[name][1])
    lay = rng.choice(layouts(name))
    size = len(data)

    def put32(at: int, value: int) -> None:
        struct.pack_into("<I", data, at, value & 0xFFFFFFFF)

    if fault == "bitflip":
        structural = [p for p, _ in lay.scalars] + lay.offsets + [p for p, _, _ in lay.lengths] + lay.vtables
        for _ in range(rng.randint(1, 4)):
            at = rng.choice(structural) + rng.randint(0, 3) if rng.random() < 0.7 else rng.randrange(size)
            data[min(at, size - 1)] ^= 1 << rng.randrange(8)
    elif fault == "truncate":
        cut = rng.choice([rng.randrange(size), rng.choice(lay.offsets), size - rng.randint(1, 64), rng.randint(8, 64)])
        return bytes(data[:max(cut, 1)])
    elif fault == "offset":
        at = rng.choice(lay.offsets)
        old = struct.unpack_from("<I", data, at)[0]
        put32(at, rng.choice([*HOSTILE_32, size, size - at, old + 4, old - 4, old + 1, rng.randrange(size)]))
    elif fault == "length":
        at, elem, n = rng.choice(lay.lengths)
        put32(at, rng.choice([0, n + 1, n * 2 + 1, n + 1000, (size // max(elem, 1)), 0x3FFFFFFF, 0xFFFFFFFF]))
    elif fault == "vtable":
        at = rng.choice(lay.vtables)
        struct.pack_into("<H", data, at, rng.choice([0, 1, 2, 3, 4, 0xFFFF, 0x8000, rng.randrange(256)]))
    elif fault == "scalar":
        at, width = rng.choice(lay.scalars)
        if width == 1:
            data[at] = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif width == 2:
            struct.pack_into("<H", data, at, rng.choice([0, 0xFFFF, 0x8000, rng.randrange(65536)]))
        elif width == 4:
            put32(at, rng.choice([*HOSTILE_32, rng.randrange(300), 0xFFFFFFFF - rng.randrange(8)]))
        else:
            struct.pack_into("<Q", data, at, rng.choice([0, 1, 1 << 32, (1 << 63) - 1, (1 << 64) - 1, size,
                                                         rng.randrange(size * 2)]))
    elif fault == "index":
        at, _ = rng.choice(lay.ints)
        put32(at, rng.choice([-2, -1, 0, 1, 2, 5, 100, 1000, 0x7FFFFFFF, rng.randrange(400)]))
    elif fault == "shape":
        if not lay.shapes:
            return mutate(name, "index", k)
        for at in rng.sample(lay.shapes, min(len(lay.shapes), rng.randint(1, 3))):
            put32(at, rng.choice(HOSTILE_DIMS))
    else:
        raise ValueError(f"unknown fault class {fault!r}")
    return bytes(data)


def cases(per_class: int) -> Iterator[tuple[str, str, int]]:
    """(seed, fault class, variant) for every seed and class, ``per_class`` variants each."""
    for fault in CLASSES:
        for name in _seed_builders():
            for k in range(per_class):
                yield name, fault, k


def sample(count: int, seed: int = 0) -> list[tuple[str, str, int]]:
    """``count`` cases spread over every class and seed (deterministic)."""
    rng = random.Random(seed)
    everything = list(cases(40))
    rng.shuffle(everything)
    by_class: dict[str, list] = collections.defaultdict(list)
    for c in everything:
        by_class[c[1]].append(c)
    out = []
    while len(out) < count:
        for fault in CLASSES:
            if by_class[fault] and len(out) < count:
                out.append(by_class[fault].pop())
    return out


# -- running one file (in the worker) -----------------------------------------------------------


def run_one(kind: str, data: bytes, backend: str = "numpy") -> dict:
    """Load, allocate, zero inputs, invoke, read outputs; the outcome as a dict (with the
    seconds it took)."""
    from teflon_py.errors import ModelError, UnsupportedError

    start = time.perf_counter()
    try:
        if kind == "tflite":
            _run_tflite(data, backend)
        else:
            _run_pte(data, backend)
    except (ModelError, UnsupportedError) as e:
        result = {"outcome": "clean", "type": type(e).__name__, "message": str(e)[:300]}
    except Exception as e:  # noqa: BLE001 - escaping exception types are what this counts
        result = {"outcome": "other", "type": type(e).__name__, "message": str(e)[:300]}
    else:
        result = {"outcome": "ok"}
    return {**result, "seconds": round(time.perf_counter() - start, 4)}


def _delegates(backend: str) -> list:
    import teflon_py

    return [] if backend == "numpy" else [teflon_py.load_delegate(backend)]


def _run_tflite(data: bytes, backend: str = "numpy") -> None:
    import teflon_py

    interp = teflon_py.Interpreter(model_content=data, experimental_delegates=_delegates(backend))
    interp.allocate_tensors()
    for d in interp.get_input_details():
        interp.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    interp.invoke()
    for d in interp.get_output_details():
        interp.get_tensor(d["index"])


def _run_pte(data: bytes, backend: str = "numpy") -> None:
    from teflon_py.executorch import Runtime

    program = Runtime.get().load_program(data, _delegates(backend))
    for name in sorted(program.method_names):
        method = program.load_method(name)
        method.execute([np.zeros(t.shape, t.dtype) for t in method.metadata.inputs])


def worker() -> None:
    """Read ``kind path`` lines on stdin, answer one JSON line per file on stdout; the process
    limits its own address space first."""
    _limit_memory()
    out = sys.stdout
    sys.stdout = sys.stderr  # anything the model run prints must not corrupt the answers
    for line in sys.stdin:
        backend, kind, path = line.rstrip("\n").split(" ", 2)
        result = run_one(kind, Path(path).read_bytes(), backend)
        out.write(json.dumps(result) + "\n")
        out.flush()


# -- the runner ---------------------------------------------------------------------------------


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class Runner:
    """A worker process under the memory limit, restarted after a crash or a hang."""

    def __init__(self, time_limit: float = TIME_LIMIT_S, backend: str = "numpy"):
        self.time_limit = time_limit
        self.backend = backend
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        # strict: a backend failure is an error here, not a quiet fallback to NumPy
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", TEFLON_STRICT="1")
        return subprocess.Popen(
            [sys.executable, "-c", "from tests.hostile.corpus import worker; worker()"],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)

    def run(self, kind: str, path: str) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        proc.stdin.write(f"{self.backend} {kind} {path}\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], self.time_limit)
        if not ready:
            self.close()
            return {"outcome": "hang"}
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            self.proc = None
            return {"outcome": "crash", "type": f"exit {code}"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def run_cases(selected: list[tuple[str, str, int]], time_limit: float = TIME_LIMIT_S,
              backend: str = "numpy") -> list[dict]:
    """Every case's outcome (with its seed, class and variant)."""
    results = []
    runner = Runner(time_limit, backend)
    try:
        with tempfile.TemporaryDirectory(prefix="teflon-hostile-") as tmp:
            for name, fault, k in selected:
                path = os.path.join(tmp, "case")
                Path(path).write_bytes(mutate(name, fault, k))
                result = runner.run(seeds()[name][0], path)
                results.append({"seed": name, "fault": fault, "variant": k, **result})
    finally:
        runner.close()
    return results


def table(results: list[dict]) -> str:
    """Counts per fault class: ok / clean error / other (crash and hang counted apart)."""
    columns = ("ok", "clean", "other", "crash", "hang")
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        counts[r["fault"]][r["outcome"]] += 1
        counts["total"][r["outcome"]] += 1
    slowest: dict[str, float] = collections.defaultdict(float)
    for r in results:
        if r["outcome"] == "clean":
            slowest[r["fault"]] = max(slowest[r["fault"]], r.get("seconds", 0.0))
            slowest["total"] = max(slowest["total"], r.get("seconds", 0.0))
    lines = [f"{'class':10}" + "".join(f"{c:>8}" for c in columns) + "  slowest error (s)"]
    for fault in (*CLASSES, "total"):
        if fault in counts:
            lines.append(f"{fault:10}" + "".join(f"{counts[fault][c]:>8}" for c in columns)
                         + f"  {slowest[fault]:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--full", action="store_true", help="every class x seed x --variants variants")
    group.add_argument("--sample", type=int, default=150, help="a spread sample of this many cases")
    parser.add_argument("--variants", type=int, default=40)
    parser.add_argument("--show", type=int, default=20, help="list this many non-clean failures")
    parser.add_argument("--json", help="write every case's outcome to this file")
    parser.add_argument("--held-out", action="store_true", help="mutate other models (mobilenet_v2, more programs)")
    parser.add_argument("--backend", default="numpy", help="numpy (default) or a delegate name (opencl)")
    args = parser.parse_args(argv)
    if args.held_out:
        use_seeds("held-out")
    selected = list(cases(args.variants)) if args.full else sample(args.sample)
    results = run_cases(selected, backend=args.backend)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=0))
    print(table(results))
    bad = [r for r in results if r["outcome"] in ("other", "crash", "hang")]
    for r in bad[:args.show]:
        print(f"{r['seed']}/{r['fault']}/{r['variant']}: {r['outcome']} {r.get('type', '')}: "
              f"{r.get('message', '')[:200]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
