#!/bin/bash
# One device call (README.md; carry .gen/ab_split and .gen/ab_alternate), about 80 s: both
# variants against the generated kernel, odd shapes at N = 3, every bench layer at N = 64,
# stride 2 at N = 128, CUDA graphs.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab_split & lab_build ab_alternate & wait
lab_conv_layers ab_split ab_alternate
lab_summary
