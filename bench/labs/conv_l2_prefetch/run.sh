#!/bin/bash
# One device call (README.md; carry .gen/ab), about 4 minutes: odd stride-2 shapes checked at
# N = 3, then the bench's stride-2 layer at N = 64 and 128 under CUDA graphs, the prefetch
# starting at 2, 4 and 6 eighths of the tile.
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
LAB_PF=4 ab n64_eager_pf4 --rounds 2
LAB_PF=4 ab n32_pf4 --graph --rounds 2 --conv-batch 32
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
