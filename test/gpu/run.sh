#!/bin/bash
# The GPU suite in one command, on the GPU machine: builds every .cu that
# test/gpu/generate.sh wrote into .gen/gpu into one shared library, then runs
# test/gpu/run_tests.py on it. Arguments go to run_tests.py (-k NAME filters);
# SKETCH_FILES='gemm_* example_*' builds only the matching generated files.
#   test/gpu/run.sh [-k gemm]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=${SKETCH_GPU_GEN:-$root/.gen/gpu}
build=${SKETCH_GPU_BUILD:-/tmp/sketch_gpu}
"$root/test/gpu/build_generated.sh" "$gen" "$build" libsketch_gpu_tests.so || exit 1
export SKETCH_GPU_LIB="$build/libsketch_gpu_tests.so" SKETCH_GPU_GEN="$gen"
# The Python package's tests compile with the static sketchc generate.sh copied there.
[ -x "$root/.gen/bin/sketchc" ] && export SKETCHC="$root/.gen/bin/sketchc"
PYTHONUNBUFFERED=1 python3 "$root/test/gpu/run_tests.py" "$@"
