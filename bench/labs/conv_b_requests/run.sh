#!/bin/bash
# One device call (README.md; carry .gen/ab), about 55 s: LAB_B 0, 1, 2 at N = 64 and 128
# under CUDA graphs, timing wrong outputs too.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab
for b in 0 1 2; do
  LAB_B=$b lab_ab ab n64_b$b --only s2p1 --graph --time-wrong --rounds 2
  LAB_B=$b lab_ab ab n128_b$b --only s2p1 --graph --time-wrong --rounds 2 --conv-batch 128
done
lab_summary
