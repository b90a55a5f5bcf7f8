#!/usr/bin/env bash
# Build .gpu-bundle/site.tar.xz: the Python packages ci/gpu-check.sh needs that a GPU machine
# WITHOUT internet lacks, for ITS Python (default 3.12, the GPU image's python3), unpacked
# site-packages style, so that gpu-check.sh only has to untar them and set PYTHONPATH.
#
# Why not carry a virtual environment: a venv points at this machine's interpreter (3.11 here,
# 3.12 there) and ours is ~400 MB (PoCL's libpocl alone is 108 MB with debug info); a carried
# tree may be 64 MiB. What the GPU image already has (numpy, pytest, pytest-xdist, hypothesis,
# protobuf, ml-dtypes, tqdm, typing-extensions) stays out. What goes in: pyopencl and its pure
# dependencies, ai-edge-litert (LiteRT's reference kernels: the tests' ground truth) with
# backports.strenum, flatbuffers at the version teflon-py pins, and PoCL
# (pocl-binary-distribution, for the PoCL-vs-GPU bench on the same machine), with its debug info
# stripped and only the avx512/avx2/sse2 kernel libraries kept. Result: ~50 MB.
#
# Needs pip with access to an index (this machine's); run from anywhere.
# Usage: ci/gpu-bundle.sh [--python 3.12] [--out DIR]   (DIR default: <repo>/.gpu-bundle, git-ignored)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pyver=3.12
out="$root/.gpu-bundle"
while [ $# -gt 0 ]; do
    case "$1" in
        --python) pyver=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--python X.Y] [--out DIR]" >&2; exit 2 ;;
    esac
done
# versions this repository was tested with (pyproject's pins where it has them)
pkgs=(pyopencl==2026.1.4 pytools==2026.1.1 platformdirs==4.14.9 siphash24==1.9 pocl-binary-distribution==3.0
      ai-edge-litert==2.3.0 backports.strenum==1.2.8 flatbuffers==25.12.19)
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== wheels for CPython $pyver"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" --implementation cp \
    "${platforms[@]}" -d "$work/wheels" "${pkgs[@]}"
echo "== unpack"
site="$work/site"
python3 -m pip install -q --no-deps --no-compile --no-index --only-binary=:all: --python-version "$pyver" \
    --implementation cp "${platforms[@]}" --target "$site" "$work"/wheels/*.whl
echo "== slim"
find "$site" -name "*.so*" -type f -exec strip --strip-debug {} + 2>/dev/null || true
find "$site/pocl_binary_distribution" -name "kernel-*.bc" ! -name "*-avx512.bc" ! -name "*-avx2.bc" \
    ! -name "*-sse2.bc" -delete
find "$site" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$site/bin"
echo "$pyver" >"$site/PYTHON_VERSION"
du -sh "$site"
echo "== compress"
mkdir -p "$out"
tar -C "$site" -cf - . | xz -T0 -6 >"$out/site.tar.xz.tmp"
mv "$out/site.tar.xz.tmp" "$out/site.tar.xz"
du -h "$out/site.tar.xz"
echo "carry .gpu-bundle with the device run; ci/gpu-check.sh unpacks it"
