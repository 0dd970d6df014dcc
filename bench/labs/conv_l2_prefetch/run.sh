#!/bin/bash
# One device call (README.md; carry .gen/ab made by make_lab.py, or by make_lab_stepped.py
# for the retry), about 80 s: odd stride-2 shapes checked at N = 3, then the bench's stride-2
# layer at N = 64 and 128 under CUDA graphs, the prefetch from 2, 4 and 6 eighths of the tile.
set -uo pipefail
source bench/labs/lab_run.sh
d=${LAB_DIR:-ab}  # .gen/$d
lab_build $d
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;64,2,64,3,2,1;128,3,128,3,2,1"
lab_ab $d ${d}_odd --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
for pf in 4 2 6; do
  LAB_PF=$pf lab_ab $d ${d}_n64_pf$pf --only s2p1 --graph --rounds 2
  LAB_PF=$pf lab_ab $d ${d}_n128_pf$pf --only s2p1 --graph --rounds 2 --conv-batch 128
done
lab_summary
