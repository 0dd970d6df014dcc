#!/bin/bash
# One device call (README.md; carry .gen/ab), about 95 s: odd shapes at N = 3 with 2 and 3
# parts, then LAB_PARTS 1-4 at N = 64 and 128 under CUDA graphs.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1"
LAB_PARTS=2 lab_ab ab odd2 --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
LAB_PARTS=3 lab_ab ab odd3 --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
for p in 1 2 3 4; do
  LAB_PARTS=$p lab_ab ab n64_p$p --only s2p1 --graph --rounds 2
  LAB_PARTS=$p lab_ab ab n128_p$p --only s2p1 --graph --rounds 2 --conv-batch 128
done
lab_summary
