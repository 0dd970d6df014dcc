#!/bin/bash
# One device call (README.md; carry .gen/ab), about 70 s: odd stride-2 shapes checked at
# N = 3, then the bench's stride-2 layer at N = 64 and 128 under CUDA graphs and eager.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;64,2,64,3,2,1;128,3,128,3,2,1"
lab_ab ab odd --only s2p1 --graph --rounds 1 --conv-batch 3 --conv-layers "$odd"
lab_ab ab n64 --only s2p1 --graph --rounds 3
lab_ab ab n128 --only s2p1 --graph --rounds 3 --conv-batch 128
lab_ab ab n64_eager --only s2p1 --rounds 2
lab_ab ab n32 --only s2p1 --graph --rounds 2 --conv-batch 32
lab_summary
