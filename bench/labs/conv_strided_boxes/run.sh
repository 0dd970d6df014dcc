#!/bin/bash
# One device call (README.md; carry .gen/ab and .gen/ab_rows), about 7 minutes. Both forms
# against the generated host functions under CUDA graphs: odd shapes checked (N = 3), the
# bench's layers at N = 64, the stride-2 layer at N = 128, the rows form with 5 output rows a
# tile at N = 64 and the hand kernel's 128-row, 6-stage tile.
set -uo pipefail
out=${OUT:-/tmp}
for d in ab ab_rows; do
  JOBS=16 test/gpu/build_generated.sh .gen/$d /tmp/$d lib$d.so > "$out/build_$d.log" 2>&1 || { tail -20 "$out/build_$d.log"; exit 1; }
done
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1"
ab() {  # ab FORM LOG ARGS...: bench_ab.py on one form's build
  local form=$1 log=$2; shift 2
  SKETCH_GPU_LIB=/tmp/$form/lib$form.so SKETCH_GPU_GEN=.gen/$form python3 bench/bench_ab.py --graph "$@" > "$out/$log.log" 2>&1
}
ab ab odd_hand --rounds 1 --only p1_default --conv-batch 3 --conv-layers "$odd"
ab ab_rows odd_rows --rounds 1 --only s2p1 --conv-batch 3 --conv-layers "$odd"
ab ab hand_n64 --rounds 2 --only p1_default
ab ab_rows rows_n64 --rounds 2 --only s2p1
ab ab hand_n128 --rounds 2 --only s2p1 --conv-batch 128
ab ab_rows rows_n128 --rounds 2 --only s2p1 --conv-batch 128
LAB_ROWS=5 ab ab_rows rows5_n64 --rounds 2 --only s2p1
LAB_BM=128 LAB_STAGES=6 ab ab hand128_n64 --rounds 2 --only p1_default
grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
