#!/bin/bash
# One device call (README.md; carry .gen/ab): the ping-pong kernels (new, 4 and 5 stages by
# LAB_PP_STAGES) against the generated host functions (old), the bench's nhwc layers at N = 64
# under graphs and eagerly, and the stride-2 layers at N = 128.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
for s in 4 5; do
  export LAB_PP_STAGES=$s
  python3 bench/bench_ab.py --rounds 2 --graph > "$out/s${s}_graph_n64.log" 2>&1
  python3 bench/bench_ab.py --rounds 2 --only s2p1 --conv-batch 128 --graph > "$out/s${s}_graph_n128.log" 2>&1
done
LAB_PP_STAGES=4 python3 bench/bench_ab.py --rounds 2 > "$out/s4_eager_n64.log" 2>&1
grep -H "round\|rror [^0]\|Error\|FAIL" "$out"/s*_n*.log
