#!/bin/bash
# One device call (README.md): the strided nhwc convolutions' host functions with their
# tall variant (192-pixel tiles) against the same with the tall branch turned off (.gen/ab:
# NAME new, NAME_ab old; carry .gen/ab), on ResNet-50's strided layers at batch 32, 64 and
# 128, CUDA-graph replays.
set -uo pipefail
out=${OUT:-/tmp}
JOBS=16 test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so > "$out/ab_build.log" 2>&1 || { tail -20 "$out/ab_build.log"; exit 1; }
export SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab
layers="128,56,128,3,2,1;256,28,256,3,2,1;512,14,512,3,2,1;256,56,512,1,2,0;512,28,1024,1,2,0;1024,14,2048,1,2,0;3,224,64,7,2,3"
python3 bench/bench_ab.py --rounds 3 --graph > "$out/ab_n64.log" 2>&1
for batch in 32 128; do
  python3 bench/bench_ab.py --rounds 2 --graph --conv-layers "$layers" --conv-batch $batch > "$out/ab_n$batch.log" 2>&1
done
grep -h "round\|error [^0]" "$out"/ab_n*.log
