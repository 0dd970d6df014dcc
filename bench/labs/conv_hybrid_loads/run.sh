#!/bin/bash
# One device call (README.md; carry .gen/ab): the hybrid-load kernels (new) against the
# generated host functions (old, one TMA im2col box a k-tile) under CUDA graphs, for each
# count of rows the TMA box brings (192 = all of the tall tile: the lab kernel's control).
set -uo pipefail
source bench/labs/lab_run.sh
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1"
lab_build ab
for rows in 128 64; do
  LAB_TMA_ROWS=$rows lab_ab ab odd_r$rows --graph --rounds 1 --only bc_ --conv-batch 3 --conv-layers "$odd"
done
for rows in 192 160 128 96 64; do
  LAB_TMA_ROWS=$rows lab_ab ab n64_r$rows --graph --rounds 2 --only s2p1
  LAB_TMA_ROWS=$rows lab_ab ab n128_r$rows --graph --rounds 2 --only s2p1 --conv-batch 128
done
for rows in 128 96; do
  LAB_TMA_ROWS=$rows lab_ab ab layers_r$rows --graph --rounds 1 --only bc_
done
lab_summary
