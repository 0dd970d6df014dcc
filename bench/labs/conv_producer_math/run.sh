#!/bin/bash
# One device call (README.md; carry .gen/ab and .gen/ab_count), about 110 s: both
# variants, odd shapes at N = 3, every bench layer at N = 64, stride 2 at N = 128.
set -uo pipefail
source bench/labs/lab_run.sh
lab_build ab ab_count
lab_conv_layers ab ab_count
lab_summary
