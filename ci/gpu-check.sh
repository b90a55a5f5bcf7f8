#!/usr/bin/env bash
# The prepared GPU check: on a machine with a real GPU and its OpenCL driver, find the GPU's
# OpenCL device (never PoCL), list the devices, run the OpenCL half of the test suite on the GPU
# (TEFLON_TEST_BACKENDS=opencl, TEFLON_STRICT=1, CI=true, the device chosen by TEFLON_CL_DEVICE:
# op tests, OpenCL backend tests and whole-model tests), bench the zoo models on the GPU, on PoCL
# on the same machine and on the NumPy fallback, and write a markdown report (devices, pass/fail
# counts, ms per model per backend, ratios). Budget: < 8 minutes on a 16-core machine (tests are
# cut at --test-budget seconds, 300 by default; each bench at 150 s).
#
# Python environment (the GPU machine has NO internet, so nothing is pip-installed there), first
# that works of:
#   1. --venv DIR, or the repository's .venv, if its python imports pyopencl and ai_edge_litert
#      (a developer machine; this is how the script is proven here: --allow-cpu on PoCL);
#   2. python3 (--python) if it already imports pyopencl, ai_edge_litert, numpy and pytest;
#   3. python3 plus .gpu-bundle/site.tar.xz, unpacked to a temporary folder on PYTHONPATH: the
#      few packages the GPU image lacks, built beforehand by ci/gpu-bundle.sh for that image's
#      Python (3.12) and carried with the device run (~50 MB; a whole venv is ~400 MB and tied to
#      this machine's interpreter, over the 64 MiB a device run may carry).
# teflon-py itself always runs from this checkout (PYTHONPATH=<repo>), never installed.
#
# OpenCL ICDs: pyopencl's wheel brings its own ICD loader, which reads /etc/OpenCL/vendors. A
# container often has the NVIDIA driver's libnvidia-opencl.so.1 mounted without an .icd file, so
# the script makes a vendors folder of its own (OCL_ICD_VENDORS): the system's .icd files, one
# for libnvidia-opencl.so.1 when found (ldconfig, /usr/local/nvidia, /usr/lib*), and PoCL's (which pyopencl's loader adds by itself).
#
# Usage: ci/gpu-check.sh [--allow-cpu] [--venv DIR] [--python PY] [--report FILE]
#                        [--test-budget S] [--tests "PATHS..."] [--runs N] [--models "SPECS..."]
#   --allow-cpu  use a CPU device when no GPU is found (a non-PoCL one first, else PoCL): proves
#                the script on a machine without a GPU
#   --tests      test paths / pytest args (default: the OpenCL half listed below)
#   --models     zoo specs NAME:DTYPE (default: mobilenet_v1/v2, float32 and int8)
# Exit status: 0 when every test passed and every bench ran, 1 otherwise, 2 on a setup failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS
allow_cpu=0 venv="" python=python3 report="" test_budget=300 runs=20
tests="tests/ops tests/test_opencl_constant.py tests/test_opencl_delegate.py tests/test_opencl_elementwise.py
tests/test_opencl_limits.py tests/test_opencl_models.py tests/test_opencl_movement.py tests/test_opencl_quantized.py
tests/test_opencl_reduce.py tests/test_opencl_runtime.py tests/test_opencl_transpose_conv.py tests/test_quant_cl.py
tests/test_cl_kernels.py"
models="mobilenet_v1:float32 mobilenet_v2:float32 mobilenet_v1:int8 mobilenet_v2:int8"
while [ $# -gt 0 ]; do
    case "$1" in
        --allow-cpu) allow_cpu=1; shift ;;
        --venv) venv=$2; shift 2 ;;
        --python) python=$2; shift 2 ;;
        --report) report=$2; shift 2 ;;
        --test-budget) test_budget=$2; shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --models) models=$2; shift 2 ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
        *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
report=${report:-${OUT:+$OUT/gpu-check.md}}
report=${report:-$root/gpu-check-report.md}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
die() { echo "gpu-check: $*" >&2; exit 2; }
log() { echo "== [$((SECONDS - start)) s] $*"; }

# -- 1. Python -------------------------------------------------------------------------------------
imports="import numpy, pyopencl, ai_edge_litert, pytest"
py=""
for cand in ${venv:+"$venv/bin/python"} "$root/.venv/bin/python"; do
    if [ -x "$cand" ] && "$cand" -c "$imports" 2>/dev/null; then py=$cand; env_kind="venv $(dirname "$(dirname "$cand")")"; break; fi
done
if [ -z "$py" ] && [ -n "$venv" ]; then die "--venv $venv has no python that imports pyopencl, ai_edge_litert and pytest"; fi
if [ -z "$py" ] && command -v "$python" >/dev/null; then
    if "$python" -c "$imports" 2>/dev/null; then
        py=$(command -v "$python"); env_kind="system $py"
    elif [ -f "$root/.gpu-bundle/site.tar.xz" ]; then
        have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        site="$work/site"
        mkdir -p "$site"
        log "unpacking .gpu-bundle/site.tar.xz for $python ($have)"
        tar -C "$site" -xJf "$root/.gpu-bundle/site.tar.xz" || die "cannot unpack .gpu-bundle/site.tar.xz"
        want=$(cat "$site/PYTHON_VERSION" 2>/dev/null)
        [ "$want" = "$have" ] || die "the bundle is for Python $want, $python is $have: rebuild with ci/gpu-bundle.sh --python $have"
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        "$python" -c "$imports" || die "$python with the bundle still cannot import: $imports"
        py=$(command -v "$python"); env_kind="$py + .gpu-bundle ($want)"
    fi
fi
[ -n "$py" ] || die "no Python with pyopencl, ai_edge_litert and pytest: make .venv (pip install -e '.[pocl,test]') or build .gpu-bundle (ci/gpu-bundle.sh)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 TEFLON_CACHE_DIR="$work/cl-cache" POCL_CACHE_DIR="$work/pocl-cache"
tef() { "$py" -m teflon_py.cli "$@"; }
log "python: $env_kind ($("$py" --version 2>&1))"

# -- 2. OpenCL vendors: the system's, NVIDIA's library where no .icd names it, PoCL's ---------------
vendors="$work/vendors"
mkdir -p "$vendors"
for icd in /etc/OpenCL/vendors/*.icd; do [ -f "$icd" ] && cp "$icd" "$vendors/"; done
if [ -n "${OCL_ICD_VENDORS:-}" ]; then  # an ICD the caller named (a file or a folder) stays visible
    if [ -d "$OCL_ICD_VENDORS" ]; then cp "$OCL_ICD_VENDORS"/*.icd "$vendors/" 2>/dev/null; else cp "$OCL_ICD_VENDORS" "$vendors/"; fi
fi
if ! grep -qs nvidia "$vendors"/*.icd; then
    nv=$( (ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}') )
    for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/compat; do
        [ -n "$nv" ] && break
        [ -e "$dir/libnvidia-opencl.so.1" ] && nv="$dir/libnvidia-opencl.so.1"
    done
    [ -n "$nv" ] && echo "$nv" >"$vendors/nvidia.icd" && log "NVIDIA OpenCL library: $nv"
fi
# PoCL needs no .icd here: pyopencl's loader adds the one beside it (pyopencl/.libs) to any vendors folder
export OCL_ICD_VENDORS="$vendors"

# -- 3. devices: the target (a GPU, not PoCL) and PoCL's CPU device for the comparison -------------
log "devices"
tef devices | tee "$work/devices.txt"
tef devices --json >"$work/devices.json" || die "no OpenCL device at all"
read -r target pocl_dev < <("$py" - "$work/devices.json" "$allow_cpu" <<'EOF'
import json, sys
devices = json.load(open(sys.argv[1]))
is_pocl = lambda d: "portable computing" in d["platform"].lower() or "pocl" in d["platform"].lower()
gpus = [d for d in devices if d["type"] == "GPU" and not is_pocl(d)]
cpus = [d for d in devices if not is_pocl(d)] + [d for d in devices if is_pocl(d)]
pick = gpus or (cpus if sys.argv[2] == "1" else [])
pocl = [d for d in devices if is_pocl(d) and d["type"] == "CPU"]
print(pick[0]["index"] if pick else "-", pocl[0]["index"] if pocl else "-")
EOF
)
[ "$target" != "-" ] || die "no GPU OpenCL device (PoCL excluded) among the devices above; --allow-cpu takes a CPU one"
target_name=$("$py" -c 'import json,sys; print(next("%s (%s, %s, %s)" % (d["name"], d["platform"], d["type"], d["version"]) for d in json.load(open(sys.argv[1])) if d["index"] == sys.argv[2]))' "$work/devices.json" "$target")
log "target device $target: $target_name; PoCL: $pocl_dev"

# -- 4. the OpenCL half of the test suite on the target --------------------------------------------
xdist=()
if "$py" -c "import xdist" 2>/dev/null && [ "$(nproc)" -ge 8 ]; then xdist=(-n 8); fi
log "tests on $target (budget ${test_budget} s${xdist:+, ${xdist[*]}})"
# shellcheck disable=SC2086
TEFLON_CL_DEVICE=$target TEFLON_TEST_BACKENDS=opencl TEFLON_STRICT=1 CI=true \
    timeout -k 10 "$test_budget" "$py" -m pytest -q -p no:cacheprovider "${xdist[@]}" --junitxml="$work/junit.xml" \
    -o junit_family=xunit1 $tests >"$work/pytest.log" 2>&1
test_rc=$?
tail -n 25 "$work/pytest.log"
[ "$test_rc" = 124 ] || [ "$test_rc" = 137 ] && echo "tests stopped at the ${test_budget} s budget"

# -- 5. benches: target, PoCL, NumPy ----------------------------------------------------------------
bench_fail=0
for spec in $models; do
    name=${spec%%:*} dtype=${spec#*:}
    model="$work/$name-$dtype.tflite"
    tef zoo "$name" --dtype "$dtype" "$model" >/dev/null || { bench_fail=1; continue; }
    for backend in target pocl numpy; do
        out="$work/bench-$name-$dtype-$backend.json"
        case $backend in
            target) dev=$target delegate=(--delegate opencl) ;;
            pocl) dev=$pocl_dev delegate=(--delegate opencl) ;;
            numpy) dev=$target delegate=() ;;
        esac
        [ "$dev" = "-" ] && continue
        log "bench $name $dtype on $backend"
        if ! TEFLON_CL_DEVICE=$dev timeout -k 5 150 "$py" -m teflon_py.cli bench "$model" "${delegate[@]}" \
                --runs "$runs" --json >"$out" 2>"$out.err"; then
            bench_fail=1; echo "failed: $(tail -n 3 "$out.err")"; rm -f "$out"; continue
        fi
        if [ "$backend" != numpy ]; then
            TEFLON_CL_DEVICE=$dev timeout -k 5 150 "$py" -m teflon_py.cli inspect "$model" --delegate opencl --json \
                >"$work/inspect-$name-$dtype-$backend.json" 2>/dev/null
        fi
    done
done

# -- 6. the report ----------------------------------------------------------------------------------
log "report"
mkdir -p "$(dirname "$report")"
"$py" - "$work" "$report" "$target" "$target_name" "$pocl_dev" "$test_rc" "$env_kind" "$models" \
    "$((SECONDS - start))" "$test_budget" <<'EOF'
import json, os, sys, xml.etree.ElementTree as ET
work, report, target, target_name, pocl, test_rc, env_kind, models, secs, budget = sys.argv[1:]
lines = ["# teflon-py GPU check", "", f"- target: `{target}` {target_name}", f"- PoCL: `{pocl}`",
         f"- python: {env_kind}", f"- wall time: {secs} s", "", "## Devices", "", "```",
         open(os.path.join(work, "devices.txt")).read().rstrip(), "```", ""]
lines += ["## Tests (OpenCL half, TEFLON_STRICT=1, on the target)", ""]
try:
    root = ET.parse(os.path.join(work, "junit.xml")).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    n = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    passed = n["tests"] - n["failures"] - n["errors"] - n["skipped"]
    lines.append(f"{passed} passed, {n['failures']} failed, {n['errors']} errors, {n['skipped']} skipped "
                 f"of {n['tests']} (pytest exit {test_rc})")
    bad = [f"{c.get('classname')}::{c.get('name')}" for s in suites for c in s.iter("testcase")
           if c.find("failure") is not None or c.find("error") is not None]
    lines += [f"- `{b}`" for b in bad[:30]] + ([f"- ... {len(bad) - 30} more"] if len(bad) > 30 else [])
except (OSError, ET.ParseError):
    stopped = test_rc in ("124", "137")
    lines.append(f"no result file (pytest exit {test_rc}{f': stopped at the {budget} s budget' if stopped else ''})")
lines += ["", "## Benchmarks (median ms per invoke; teflon-py bench)", "",
          "| model | target | PoCL | NumPy | NumPy / target | PoCL / target | nodes on target |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
def median(name, backend):
    try:
        return json.load(open(os.path.join(work, f"bench-{name}-{backend}.json")))["median_ms"]
    except (OSError, ValueError, KeyError):
        return None
def placed(name, backend):
    try:
        nodes = json.load(open(os.path.join(work, f"inspect-{name}-{backend}.json")))["nodes"]
    except (OSError, ValueError, KeyError):
        return "?"
    return f"{sum(n['backend'] == 'opencl' for n in nodes)}/{len(nodes)}"
fmt = lambda v: "-" if v is None else f"{v:.2f}"
ratio = lambda a, b: "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"
for spec in models.split():
    name = spec.replace(":", "-")
    t, p, n = (median(name, b) for b in ("target", "pocl", "numpy"))
    lines.append(f"| {spec} | {fmt(t)} | {fmt(p)} | {fmt(n)} | {ratio(n, t)} | {ratio(p, t)} | {placed(name, 'target')} |")
open(report, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "report written to $report"
[ "$test_rc" = 0 ] && [ "$bench_fail" = 0 ]
