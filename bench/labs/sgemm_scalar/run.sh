#!/bin/bash
# Needs .gen/sgl/bench_f32_gemm_1.cu (sketchc bench/gemm/bench_f32_gemm_1.sketch --arch sm_90a).
# One device call: builds the lab, checks and times the variants against cuBLAS, then ncu's
# L1 and stall figures for each kernel at 4095^3 (one run each).
#   bash bench/labs/sgemm_scalar/run.sh OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/sgemm_scalar}
mkdir -p "$out"
gen=$here/../../../.gen/sgl
old=()  # .gen/sgl/old: the generated file with bg_ renamed bo_ and the runtime it was built with
if [ -f "$gen/old/bench_f32_gemm_1.cu" ]; then
  nvcc -std=c++17 -O3 -I"$gen/old/include" -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
    -c -o "$out/old.o" "$gen/old/bench_f32_gemm_1.cu" > "$out/ptxas_old.txt" 2>&1 || { cat "$out/ptxas_old.txt"; exit 1; }
  old=(-DSGL_OLD "$out/old.o")
fi
nvcc -std=c++17 -O3 -I"$here/../../../runtime/include" -gencode arch=compute_90a,code=sm_90a \
  -Xptxas -v -o "$out/lab" "$here/sgemm_scalar.cu" "$gen/bench_f32_gemm_1.cu" "${old[@]}" -lcublas > "$out/ptxas.txt" 2>&1 || { cat "$out/ptxas.txt"; exit 1; }
grep -E "registers|spill" "$out/ptxas.txt" | paste - - | sed 's/ptxas info    ://g'
"$out/lab"
