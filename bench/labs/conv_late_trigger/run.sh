#!/bin/bash
# One device call (README.md; carry .gen/ab): the late-trigger kernels (new) against the
# generated ones (old), the bench's nhwc layers at N = 64 in eager calls and in graph replays,
# and the stride-2 layers at N = 128.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
python3 bench/bench_ab.py --rounds 2 > "$out/eager_n64.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --graph > "$out/graph_n64.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only s2p1 --conv-batch 128 > "$out/eager_n128.log" 2>&1
python3 bench/bench_ab.py --rounds 2 --only s2p1 --conv-batch 128 --graph > "$out/graph_n128.log" 2>&1
grep -H "round\|rror [^0]" "$out"/*_n*.log
