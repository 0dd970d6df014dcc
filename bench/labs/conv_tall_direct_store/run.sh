#!/bin/bash
# One device call (README.md; carry .gen/ab), about 90 s: odd stride-2 shapes checked at N = 3,
# then the stride-2 layer at N = 32, 64 and 128 under CUDA graphs (new: the rewritten tall
# kernel; old: as generated).
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1"
lab_ab ab odd --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
for n in 64 128 32; do
  lab_ab ab n$n --only s2p1 --graph --rounds 2 --conv-batch $n
done
lab_summary
