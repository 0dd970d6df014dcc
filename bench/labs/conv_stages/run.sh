#!/bin/bash
# One device call (README.md; carry .gen/ab), about 60 s: odd stride-2 shapes at N = 3, the
# stride-2 layer at N = 32, 64 and 128 under CUDA graphs.
set -uo pipefail
source bench/labs/lab_run.sh
d=${LAB_DIR:-ab}  # .gen/$d
lab_build $d
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1"
lab_ab $d ${d}_odd --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
for n in 32 64 128; do
  lab_ab $d ${d}_n$n --only s2p1 --graph --rounds 2 --conv-batch $n
done
lab_summary
