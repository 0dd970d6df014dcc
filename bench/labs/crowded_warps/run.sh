#!/bin/bash
# The crowded-warps lab (README.md), on the GPU machine, carrying .gen/ab after make_lab.sh:
# each tile with 8 warps (NAME) against 4 (NAME_ab) and cuBLAS, 3 rounds.
source bench/labs/lab_run.sh
export SKETCH_ALLOW_SPILLS=1  # a 4-warp twin may spill
lab_build ab
lab_ab ab crowded --only cw_ --rounds 3 --graph
lab_summary
