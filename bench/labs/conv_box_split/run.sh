#!/bin/bash
# One device call (README.md; carry .gen/ab), about 90 s: odd shapes at N = 3 with 2 and 3
# parts, then LAB_PARTS 1-4 at N = 64 and 128 under CUDA graphs.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
ab() {  # ab LOG ARGS...
  local log=$1; shift
  SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/bench_ab.py --only s2p1 --graph "$@" > "$out/$log.log" 2>&1
}
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1"
LAB_PARTS=2 ab odd2 --rounds 1 --conv-batch 3 --conv-layers "$odd"
LAB_PARTS=3 ab odd3 --rounds 1 --conv-batch 3 --conv-layers "$odd"
for p in 1 2 3 4; do
  LAB_PARTS=$p ab n64_p$p --rounds 2
  LAB_PARTS=$p ab n128_p$p --rounds 2 --conv-batch 128
done
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
