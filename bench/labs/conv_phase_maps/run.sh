#!/bin/bash
# One device call (README.md; carry .gen/ab), about 4 minutes: odd stride-2 shapes checked at
# N = 3, then the bench's stride-2 layer at N = 64 and 128 under CUDA graphs and eager.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
ab() {  # ab LOG ARGS...
  local log=$1; shift
  SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/bench_ab.py --only s2p1 "$@" > "$out/$log.log" 2>&1
}
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;64,2,64,3,2,1;64,23,64,5,2,1;64,17,128,1,2,1;128,3,128,3,2,1"
ab odd --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
ab n64 --graph --rounds 3
ab n128 --graph --rounds 3 --conv-batch 128
ab n64_eager --rounds 2
ab n32 --graph --rounds 2 --conv-batch 32
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
