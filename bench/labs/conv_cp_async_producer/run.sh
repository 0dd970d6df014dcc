#!/bin/bash
# One device call (README.md; carry .gen/ab): the cp.async-producer kernels (new) against the
# generated host functions (old, TMA im2col), at N = 64 and 128 under graphs: the same tiles,
# then the 128 x 128 tile with 4 and 6 stages (LAB_NO_TALL) against the generated choice.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
python3 bench/bench_ab.py --rounds 2 --graph > "$out/same_graph_n64.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only s2p1 --conv-batch 128 --graph > "$out/same_graph_n128.log" 2>&1
for s in 4 6; do
  LAB_NO_TALL=1 LAB_STAGES=$s python3 bench/bench_ab.py --rounds 2 --only s2p1 --graph > "$out/bm128_s${s}_graph_n64.log" 2>&1
  LAB_NO_TALL=1 LAB_STAGES=$s python3 bench/bench_ab.py --rounds 2 --only s2p1 --conv-batch 128 --graph > "$out/bm128_s${s}_graph_n128.log" 2>&1
done
python3 bench/bench_ab.py --rounds 2 --only s2p1 > "$out/same_eager_n64.log" 2>&1
grep -H "round\|rror [^0]\|Error\|FAIL" "$out"/*_n*.log | sed 's/.*out\///'
