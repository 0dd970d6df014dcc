#!/bin/bash
# One device call (README.md; carry .gen/ab), about 2 minutes: LAB_B 0, 1, 2 at N = 64 and 128
# under CUDA graphs, timing wrong outputs too.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
ab() {  # ab LOG ARGS...
  local log=$1; shift
  SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/bench_ab.py --only s2p1 --graph --time-wrong "$@" > "$out/$log.log" 2>&1
}
for b in 0 1 2; do
  LAB_B=$b ab n64_b$b --rounds 2
  LAB_B=$b ab n128_b$b --rounds 2 --conv-batch 128
done
grep -H "round" "$out"/*.log | sed 's/.*out\///'
