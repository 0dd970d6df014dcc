#!/bin/bash
# One device call (about 20 s): builds carveout.cu and runs it.  bash bench/labs/sgemm_scalar/carveout_run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
nvcc -std=c++17 -O3 -I"$here/../../../runtime/include" -gencode arch=compute_90a,code=sm_90a \
  -o /tmp/sgemm_carveout "$here/carveout.cu" -lcublas || exit 1
/tmp/sgemm_carveout
