#!/bin/bash
# One device call (README.md; carry .gen/ab), about 3 minutes: odd shapes at N = 3 (even
# sizes take the patches, odd ones the generated path), then the stride-2 layer at N = 32,
# 64 and 128 under CUDA graphs, eagerly at N = 64, and other patch shapes at N = 64.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab
odd="128,56,128,3,2,1;64,30,72,3,2,1;128,14,256,3,2,1;64,2,64,3,2,1;192,10,136,3,2,1;128,57,128,3,2,1;64,31,72,3,2,1"
lab_ab ab odd --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
LAB_PATCH=7,2,8 lab_ab ab odd_728 --only s2p1 --graph --rounds 1 --conv-batch 5 --conv-layers "$odd"
lab_ab ab n64 --only s2p1 --graph --rounds 3
lab_ab ab n128 --only s2p1 --graph --rounds 2 --conv-batch 128
lab_ab ab n32 --only s2p1 --graph --rounds 2 --conv-batch 32
lab_ab ab n64_eager --only s2p1 --rounds 2
for pa in 2,4,16 4,2,16 2,2,32 7,2,8 7,4,4; do
  LAB_PATCH=$pa lab_ab ab "n64_$(echo $pa | tr , _)" --only s2p1 --graph --rounds 1
done
lab_summary
