#!/bin/bash
# The sgemm lab built under several ptxas option sets (README.md, 2026-12-03), timed at 4096^3.
set -e
build() {  # name flags...
  local name=$1; shift
  nvcc -std=c++17 -O3 -Iruntime/include -gencode arch=compute_90a,code=sm_90a -diag-suppress 177 "$@" \
    -o /tmp/sg_$name bench/labs/sgemm_pipeline/sgemm.cu .gen/sgl/lab.cu -lcublas -Xptxas -v > /tmp/sg_$name.ptx 2>&1 || { tail -5 /tmp/sg_$name.ptx; return 1; }
}
build base &
build O2 -Xptxas -O2 &
build O1 -Xptxas -O1 &
build cg -Xptxas -dlcm=cg &
wait
for v in base O2 O1 cg; do
  echo "== $v: $(grep -A3 'lab_default_simtILb1ELb1' /tmp/sg_$v.ptx | grep -o 'Used [0-9]* registers' | head -1) $(grep -A3 'lab_default_simtILb1ELb1' /tmp/sg_$v.ptx | grep -o '[0-9]* bytes spill stores' | head -1)"
  /tmp/sg_$v 4096 | tail -4
done
