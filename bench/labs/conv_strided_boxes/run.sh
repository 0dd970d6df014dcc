#!/bin/bash
# One device call (README.md; carry .gen/ab and .gen/ab_rows), about 2 minutes. Both forms
# against the generated host functions under CUDA graphs: odd shapes checked (N = 3), the
# bench's layers at N = 64, the stride-2 layer at N = 128, the rows form with 5 output rows a
# tile at N = 64 and the hand kernel's 128-row, 6-stage tile.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab ab_rows
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1"
lab_ab ab odd_hand --graph --rounds 1 --only p1_default --conv-batch 3 --conv-layers "$odd"
lab_ab ab_rows odd_rows --graph --rounds 1 --only s2p1 --conv-batch 3 --conv-layers "$odd"
lab_ab ab hand_n64 --graph --rounds 2 --only p1_default
lab_ab ab_rows rows_n64 --graph --rounds 2 --only s2p1
lab_ab ab hand_n128 --graph --rounds 2 --only s2p1 --conv-batch 128
lab_ab ab_rows rows_n128 --graph --rounds 2 --only s2p1 --conv-batch 128
LAB_ROWS=5 lab_ab ab_rows rows5_n64 --graph --rounds 2 --only s2p1
LAB_BM=128 LAB_STAGES=6 lab_ab ab hand128_n64 --graph --rounds 2 --only p1_default
lab_summary
