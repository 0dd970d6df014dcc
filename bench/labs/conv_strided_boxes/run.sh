#!/bin/bash
# One device call (README.md; carry .gen/ab), about 6 minutes: odd shapes checked (N = 3),
# then the bench's 3x3 layers (stride 1 with K > 64, and stride 2) at N = 64 under CUDA graphs
# with the 192-row (default) and the 128-row, 6-stage tile against the generated host; the
# stride-2 layer at N = 128 both ways and at N = 64 with 5 output rows a 192-row tile.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1"
python3 bench/bench_ab.py --rounds 1 --only p1_default --graph --conv-batch 3 --conv-layers "$odd" > "$out/odd.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only p1_default --graph > "$out/bm192_n64.log" 2>&1
LAB_BM=128 LAB_STAGES=6 python3 bench/bench_ab.py --rounds 2 --only p1_default --graph > "$out/bm128_n64.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph --conv-batch 128 > "$out/bm192_n128.log" 2>&1
LAB_BM=128 LAB_STAGES=6 python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph --conv-batch 128 > "$out/bm128_n128.log" 2>&1
LAB_ROWS=5 python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph > "$out/bm192_r5_n64.log" 2>&1
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
