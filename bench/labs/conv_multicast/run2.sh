#!/bin/bash
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
for cs in 2 4; do
  SKETCH_LAB_CS=$cs python3 bench/bench_ab.py --rounds 2 --graph 2>&1 | grep "lab:\|round\|rror"
  SKETCH_LAB_CS=$cs python3 bench/bench_ab.py --rounds 2 --graph --conv-layers "128,56,128,3,2,1;256,28,256,3,2,1" --conv-batch 128 2>&1 | grep "lab:\|round\|rror"
done
