#!/bin/bash
# One device call (README.md, "Retry"; carry .gen/ab made by make_lab_stepped.py), about
# 80 s: odd shapes at N = 3, then LAB_PF 2, 4, 6 at N = 64 and 128 under CUDA graphs.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
ab() {  # ab LOG ARGS...
  local log=$1; shift
  SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/bench_ab.py --only s2p1 "$@" > "$out/$log.log" 2>&1
}
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;64,2,64,3,2,1;128,3,128,3,2,1"
ab odd --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
for pf in 4 2 6; do
  LAB_PF=$pf ab n64_pf$pf --graph --rounds 2
  LAB_PF=$pf ab n128_pf$pf --graph --rounds 2 --conv-batch 128
done
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
