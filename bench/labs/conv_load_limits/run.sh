#!/bin/bash
# One device call (README.md; carry .gen/ab), about 100 s with a cold start.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/labs/conv_load_limits/modes.py
