#!/bin/bash
# The GEMM ping-pong lab (README.md), on the GPU machine after, here:
#   sketchc bench/labs/gemm_pingpong/lab.sketch --arch sm_90a -o .gen/gpp/lab.cu
# then, carrying .gen/gpp: bash bench/labs/gemm_pingpong/run.sh
set -e
nvcc -std=c++17 -O3 -Iruntime/include -I.gen/gpp -Ibench/labs/gemm_pingpong -gencode arch=compute_90a,code=sm_90a \
  -o /tmp/gemm_pingpong bench/labs/gemm_pingpong/pingpong.cu .gen/gpp/lab.cu -lcublas -lcuda
/tmp/gemm_pingpong
