#!/bin/bash
# One device call (README.md; carry .gen/ab_split and .gen/ab_alternate): both variants
# against the generated kernel, odd shapes at N = 3, every bench layer at N = 64, stride 2
# at N = 128, CUDA graphs.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab_split & lab_build ab_alternate & wait
odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1;128,9,192,1,1,0;64,13,128,1,1,0"
for f in ab_split ab_alternate; do
  lab_ab $f odd_$f --graph --rounds 1 --only bc_ --conv-batch 3 --conv-layers "$odd"
  lab_ab $f n64_$f --graph --rounds 2 --only bc_
  lab_ab $f n128_$f --graph --rounds 2 --only s2p1 --conv-batch 128
done
lab_summary
