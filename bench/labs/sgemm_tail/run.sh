#!/bin/bash
# The sgemm tail lab (README.md), on the GPU machine after, here:
#   sketchc bench/labs/sgemm_tail/lab.sketch --arch sm_90a -o .gen/sgt/lab.cu
#   python3 bench/labs/sgemm_tail/prepare.py .gen/sgt/lab.cu
# then, carrying .gen/sgt: bash bench/labs/sgemm_tail/run.sh ["M N K R,S ..." ...]
set -e
nvcc -std=c++17 -O3 -Iruntime/include -I.gen/sgt -gencode arch=compute_90a,code=sm_90a -diag-suppress 177 \
  -o /tmp/sgemm_tail bench/labs/sgemm_tail/tail.cu .gen/sgt/lab.cu -lcublas
tails="2,4 2,8 3,4 3,8 4,2 4,4 4,8 5,4 5,8 6,4 6,8 8,8 4,4p"
cases=("4096 4096 4096 $tails" "3968 4096 4096 $tails" "4096 4096 8192 $tails")
[ $# -gt 0 ] && cases=("$@")
for c in "${cases[@]}"; do
  echo "== $c"
  /tmp/sgemm_tail $c
done
