#!/bin/bash
# One device call: builds the DMMA lab and runs it (peak rates, errors, timings against cuBLAS).
#   bash bench/labs/sgemm_dmma/run.sh OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/sgemm_dmma}
mkdir -p "$out"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -o "$out/dmma" "$here/dmma.cu" -lcublas \
  > "$out/ptxas.txt" 2>&1 || { cat "$out/ptxas.txt"; exit 1; }
grep -E "registers|spill" "$out/ptxas.txt" | paste - - | sed 's/ptxas info    ://g' | cut -c1-220
"$out/dmma"
