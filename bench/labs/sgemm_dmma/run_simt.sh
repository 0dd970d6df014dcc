#!/bin/bash
# Needs .gen/sgd/bench_f32_gemm_1.cu (sketchc bench/gemm/bench_f32_gemm_1.sketch --arch sm_90a).
# One device call: the DmmaTile lab against cuBLAS and the generated default.
#   bash bench/labs/sgemm_dmma/run_simt.sh OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../../..
out=${1:-/tmp/sgemm_dmma}
mkdir -p "$out"
nvcc -std=c++17 -O3 -I"$root/runtime/include" -I"$root/.gen/sgd" -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
  -o "$out/simt_dmma" "$here/simt_dmma.cu" "$root/.gen/sgd/bench_f32_gemm_1.cu" -lcublas > "$out/ptxas.txt" 2>&1 ||
  { cat "$out/ptxas.txt"; exit 1; }
grep -E "Compiling entry|registers|spill" "$out/ptxas.txt" | grep -B1 -A1 dmma_simt | grep -oE "dmma_simtILb[01]ELb[01]ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+|Used [0-9]+ registers|[0-9]+ bytes spill stores" | paste - - - 2>/dev/null | head -60
"$out/simt_dmma"
