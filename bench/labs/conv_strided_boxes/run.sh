#!/bin/bash
# One device call (README.md; carry .gen/ab), about 4 minutes: odd stride-2 shapes checked
# (N = 3), then the bench's stride-2 layer at N = 64 and 128 under CUDA graphs with the
# 192-row (default) and 128-row, 6-stage strided-box kernels against the generated host; at
# N = 64 also 5 output rows a 192-row tile (320 tiles of 6 rows are 2.4 waves on 132 SMs, 384
# of 5 rows 2.9).
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
python3 bench/bench_ab.py --rounds 1 --only s2p1 --graph --conv-batch 3 \
  --conv-layers "128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1" > "$out/odd.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph > "$out/bm192_n64.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph --conv-batch 128 > "$out/bm192_n128.log" 2>&1
LAB_BM=128 LAB_STAGES=6 python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph > "$out/bm128_n64.log" 2>&1
LAB_ROWS=5 python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph > "$out/bm192_r5_n64.log" 2>&1
LAB_BM=128 LAB_STAGES=6 python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph --conv-batch 128 > "$out/bm128_n128.log" 2>&1
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
