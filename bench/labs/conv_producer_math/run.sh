#!/bin/bash
# One device call (README.md; carry .gen/ab and .gen/ab_count), about 3 minutes: both
# variants, odd shapes at N = 3, every bench layer at N = 64, stride 2 at N = 128.
set -uo pipefail
out=${OUT:-/tmp}
for d in ab ab_count; do
  JOBS=16 test/gpu/build_generated.sh .gen/$d /tmp/$d lib$d.so > "$out/build_$d.log" 2>&1 || { tail -20 "$out/build_$d.log"; exit 1; }
done
ab() {  # ab FORM LOG ARGS...
  local form=$1 log=$2; shift 2
  SKETCH_GPU_LIB=/tmp/$form/lib$form.so SKETCH_GPU_GEN=.gen/$form python3 bench/bench_ab.py --graph "$@" > "$out/$log.log" 2>&1
}
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1;128,9,192,1,1,0;64,13,128,1,1,0"
for f in ab ab_count; do
  ab $f odd_$f --rounds 1 --only bc_ --conv-batch 3 --conv-layers "$odd"
  ab $f n64_$f --rounds 2 --only bc_
  ab $f n128_$f --rounds 2 --only s2p1 --conv-batch 128
done
grep -H "round" "$out"/*.log | sed 's/.*out\///'
