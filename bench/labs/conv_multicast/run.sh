#!/bin/bash
# One device call (README.md; carry .gen/ab): the multicast kernel (new, SKETCH_LAB_CS = 2, 4)
# against the generated host function (old) on the strided 3x3 layers, CUDA-graph replays.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
layers="128,56,128,3,2,1;256,28,256,3,2,1;512,14,512,3,2,1"
for cs in 2 4; do
  SKETCH_LAB_CS=$cs python3 bench/bench_ab.py --rounds 2 --graph > "$out/ab_cs${cs}_n64.log" 2>&1
  for batch in 32 128; do
    SKETCH_LAB_CS=$cs python3 bench/bench_ab.py --rounds 2 --graph --conv-layers "$layers" --conv-batch $batch > "$out/ab_cs${cs}_n$batch.log" 2>&1
  done
done
grep -H "round\|rror" "$out"/ab_cs*.log
