#!/bin/bash
# The crowded-fragments lab (README.md), on the GPU machine, carrying .gen/ab after make_lab.sh:
# each tile with one fragment buffer (NAME) against two (NAME_ab) and cuBLAS, 3 rounds.
source bench/labs/lab_run.sh
export SKETCH_ALLOW_SPILLS=1  # the two-buffer twins of the crowded tiles spill
lab_build ab
lab_ab ab crowded --only cf_ --rounds 3 --graph
lab_summary
