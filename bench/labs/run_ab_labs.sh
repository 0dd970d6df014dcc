#!/bin/bash
# On the GPU machine: builds and times each .gen/ab_* lab that bench/labs/prepare_ab_labs.sh
# wrote (bench/bench_ab.py: each kernel checked once against the library on a NaN-poisoned
# output, then 3 rounds of new against _ab in alternating batches), a log each under $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-/tmp}
for dir in .gen/ab_*; do
  lab=$(basename "$dir")
  case $lab in ab_conv) only=bc_ ;; ab_attn_*) only=attn_ ;; *) continue ;; esac
  echo "== $lab"
  JOBS=${JOBS:-16} test/gpu/build_generated.sh "$dir" "/tmp/$lab" "lib$lab.so" || continue
  SKETCH_GPU_LIB="/tmp/$lab/lib$lab.so" SKETCH_GPU_GEN="$dir" \
    python3 bench/bench_ab.py --rounds 3 --only "$only" > "$out/$lab.log" 2>&1
  grep "new/old" "$out/$lab.log" | sed -E 's/: library .*new\/old/: new\/old/'
  grep -E "status [^0]|error ([1-9][0-9.]*e-0[0-2]|nan)|Traceback" "$out/$lab.log" | head -5
done
