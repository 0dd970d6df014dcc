#!/bin/bash
# The large-grid tile's sweep (README.md): builds the lab against lab.sketch's kernels
# (.gen/sgl/lab.cu, generated beforehand by sketchc) and times each shape. K odd: A's rows
# are not 16-byte chunks, so the default kernel may take its 256 x 128 tile. Comments give
# the 256 x 128 tiles and their rounds of an H200's 132 SMs.
set -e
nvcc -std=c++17 -O3 -Iruntime/include -gencode arch=compute_90a,code=sm_90a -diag-suppress 177 \
  -o /tmp/sgemm_lab bench/labs/sgemm_pipeline/sgemm.cu .gen/sgl/lab.cu -lcublas
shapes=(
  "2816 1536 2049"   # 132 tiles, 1 round
  "2816 2304 2049"   # 198, 1.5
  "2816 3072 2049"   # 264, 2
  "3001 3001 3001"   # 288, 2.18
  "2816 3840 2049"   # 330, 2.5
  "2816 4224 2049"   # 363, 2.75
  "4000 3001 2001"   # 384, 2.91
  "2816 4608 2049"   # 396, 3
  "2816 5376 2049"   # 462, 3.5
  "4095 4095 4095"   # 512, 3.88
  "4095 4093 517"    # 512, 3.88, short K
  "5632 4224 2049"   # 726, 5.5
  "5632 4608 2049"   # 792, 6
  "4096 4096 4096"   # 16-byte rows: the default tile
)
[ $# -gt 0 ] && shapes=("$@")  # sweep.sh "M N K" ...: those shapes only
for s in "${shapes[@]}"; do
  echo "== $s"
  /tmp/sgemm_lab $s
done
