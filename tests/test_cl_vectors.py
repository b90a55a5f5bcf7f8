"""``cl_kernels/vectors.cl``'s two renderings on the default device: clang's vector extensions
(PoCL's CPU devices) and standard OpenCL C (every other device, e.g. Mesa rusticl). CI's main
run is on PoCL, so the standard rendering is forced here (``TEFLON_CL_VECTORS=standard``) and
whole networks must still match LiteRT (int8 bit-exact); CI's rusticl stage runs it natively."""
from __future__ import annotations

import pytest

from teflon_py import zoo
from teflon_py.opencl.caps import VECTORS_ENV, Caps
from tests.harness import check_model

pytest.importorskip("pyopencl")


@pytest.fixture
def rendering(device, monkeypatch: pytest.MonkeyPatch):
    """set(name): build every program from here on in that rendering (fresh program caches)."""
    from teflon_py.opencl.runtime import programs

    def set_rendering(name: str) -> None:
        monkeypatch.setenv(VECTORS_ENV, name)
        programs.clear_memo()

    yield set_rendering
    programs.clear_memo()  # later tests build in the device's own rendering again


def _caps() -> Caps:
    from teflon_py.opencl.runtime import device as dev

    return Caps.of(dev.get_context().device)


def test_override_picks_the_rendering(rendering) -> None:
    """The override decides clang_vectors (and so VNNI, which is clang code), and the macro that
    programs get, so the two renderings never share a cache entry."""
    from teflon_py.opencl.runtime import device as dev
    from teflon_py.opencl.runtime import programs

    rendering("standard")
    standard = _caps()
    assert not standard.clang_vectors and not standard.vnni and standard.program_defines == {}
    assert programs.program_cache(dev.get_context()).device_defines == {}
    p_standard = programs.program_cache(dev.get_context()).build(("common.cl",))
    rendering("clang")
    clang = _caps()
    assert clang.clang_vectors and clang.program_defines == {"TEFLON_CLANG_VECTORS": True}
    assert programs.program_cache(dev.get_context()).build(("common.cl",)) is not p_standard


def test_override_rejects_other_values(monkeypatch: pytest.MonkeyPatch, device) -> None:
    monkeypatch.setenv(VECTORS_ENV, "fast")
    with pytest.raises(ValueError, match="expected 'standard' or 'clang'"):
        _caps()


@pytest.mark.parametrize("name, variant", [("demo", "float32"), ("demo", "int8"),
                                           ("mobilenet_v1", "float32"), ("mobilenet_v2", "int8")])
def test_standard_rendering_matches_litert(rendering, name: str, variant: str) -> None:
    """Standard OpenCL C kernels (vload16, convert_*, no 64-wide vectors, no prefetch): the same
    results as LiteRT, every node on the device (float convolutions, GEMM, depthwise, pools,
    int8 convolutions with folded residual ADDs, requantization)."""
    rendering("standard")
    io = None if variant == "float32" else "int8"
    it = check_model(zoo.build(name, dtype=variant, io=io), "opencl", float_tol=1e-4)
    placements = it.placements()
    assert [p.backend for p in placements] == ["opencl"] * len(placements), placements


def test_standard_rendering_int8_conv_loop(rendering) -> None:
    """The int8 convolution's standard loop (weight quads sign-extended by shifts) is the one that
    compiles, and it is bit-exact (7 input channels: a tail quad; stride 2; RELU6)."""
    from tests.test_opencl_quantized import _compiled_variants, _two_convs

    rendering("standard")
    it = check_model(_two_convs(), "opencl")
    assert _compiled_variants(it) == [("qconv", "standard")]


CLANG_ONLY = ("__builtin_", "ext_vector_type", "aligned(1)", "_Pragma(\"clang")


def _standard_lines(source: str) -> list[tuple[int, str]]:
    """The lines of an OpenCL source that a compiler sees without TEFLON_CLANG_VECTORS: a small
    preprocessor over #if/#ifdef/#elif/#else/#endif, where a branch whose condition requires the
    macro (``#ifdef TEFLON_CLANG_VECTORS``, ``defined(TEFLON_CLANG_VECTORS) && ...``) is dead, and
    so is one on a macro defined only in dead code (qconv.cl's QCONV_VNNI)."""
    stack: list[list[bool]] = []  # per open #if: [this branch live, an earlier branch was live]
    clang_macros = {"TEFLON_CLANG_VECTORS"}

    def requires_clang(cond: str) -> bool:
        cond = cond.strip()
        if "||" in cond:
            return False
        terms = [t.strip() for t in cond.split("&&")]  # a conjunction: one required term suffices
        return any(t in clang_macros or t in {f"defined({m})" for m in clang_macros} for t in terms)

    live_lines = []
    for number, line in enumerate(source.splitlines(), 1):
        text = line.strip()
        head = text.split(None, 1)
        word, rest = (head[0], head[1] if len(head) > 1 else "") if head else ("", "")
        if word in ("#if", "#ifdef"):
            stack.append([not requires_clang(rest), False])
        elif word == "#ifndef":
            stack.append([True, False])
        elif word == "#elif":
            stack[-1] = [not requires_clang(rest), True]
        elif word == "#else":
            stack[-1] = [True, True]
        elif word == "#endif":
            stack.pop()
        elif word == "#define" and not all(live for live, _ in stack):
            clang_macros.add(rest.split()[0].split("(")[0])
        elif all(live for live, _ in stack) and not text.startswith("//"):
            live_lines.append((number, line.split("//")[0]))
    return live_lines


def test_standard_rendering_has_no_clang_only_constructs() -> None:
    """Issue 11's rule: clang builtins, non-standard vector typedefs and alignment attributes only
    behind TEFLON_CLANG_VECTORS, so a non-clang OpenCL compiler (a GPU vendor's) takes the rest."""
    from importlib.resources import files

    found = []
    for source in sorted(files("teflon_py.cl_kernels").iterdir(), key=lambda p: p.name):
        if not source.name.endswith(".cl"):
            continue
        for number, code in _standard_lines(source.read_text()):
            found += [f"{source.name}:{number}: {code.strip()}" for c in CLANG_ONLY if c in code]
    assert not found, "\n".join(found)


def test_scanner_sees_through_the_guards() -> None:
    src = ("#ifdef TEFLON_CLANG_VECTORS\nA __builtin_x\n#else\nB\n#endif\n"
           "#if defined(W8) && defined(TEFLON_CLANG_VECTORS)\nC\n#elif defined(X)\nD __builtin_y\n#endif\n")
    assert [c.strip() for _, c in _standard_lines(src)] == ["B", "D __builtin_y"]
