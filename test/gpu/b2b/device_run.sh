#!/bin/bash
# One device session for the b2b backend alone (the suite-wide way is
# test/gpu/generate.sh + run.sh and bench/generate.sh + run.sh): compiles the
# CUDA that sketchc wrote under .gen/b2b, runs the GPU tests and the benchmark.
# Here (with sketchc):
#   mkdir -p .gen/b2b/bench
#   for f in bench/b2b/*.sketch; do
#     build/compiler/sketchc $f --arch sm_90a -o .gen/b2b/bench/$(basename $f .sketch).cu; done
#   build/compiler/sketchc test/gpu/b2b/b2b_variants.sketch --arch sm_90a -o .gen/b2b/b2b_variants.cu
# then on the GPU machine, from the repository root (carrying .gen/b2b):
#   bash test/gpu/b2b/device_run.sh [tests|bench|all]
# With MIN_BLOCKS=N each benchmark kernel is also built with
# SKETCH_B2B_MIN_BLOCKS=N (NAME_mbN.so: ptxas fits N blocks a SM), and with
# VARIANT_FLAGS too (e.g. -DSKETCH_B2B_L2_PREFETCH=0, for an A/B in one run).
# The tests run twice: on the library as generated (TMA where the kernel has it) and
# on one built with -DSKETCH_B2B_TMA=0 (the cp.async path of the same kernels).
set -u
what=${1:-all}
gen=.gen/b2b
out=${OUT:-/tmp/b2b-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
compile() { # file.cu [min blocks | notma]: file.so (file_mbN.so, file_notma.so), ptxas report beside it
  local base=${1%.cu} flags="" name=${1%.cu}
  if [ "${2:-}" = notma ]; then flags="-DSKETCH_B2B_TMA=0"; name=${base}_notma
  elif [ -n "${2:-}" ]; then flags="-DSKETCH_B2B_MIN_BLOCKS=$2 ${VARIANT_FLAGS:-}"; name=${base}_mb$2; fi
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Iruntime/include $flags \
    -Xcompiler -fPIC -shared "$1" -o "$name.so" -Xptxas -v > "$name.log" 2>&1 || echo "COMPILE FAILED: $name"
}
export -f compile
jobs=()
[ "$what" != bench ] && jobs+=("$gen/b2b_variants.cu" "$gen/b2b_variants.cu notma")
if [ "$what" != tests ]; then
  for f in $gen/bench/*.cu; do jobs+=("$f"); [ -n "${MIN_BLOCKS:-}" ] && jobs+=("$f $MIN_BLOCKS"); done
fi
printf '%s\n' "${jobs[@]}" | xargs -P 16 -I{} bash -c 'compile {}'
echo "ptxas spills:"; grep -l "[1-9][0-9]* bytes spill" $gen/*.log $gen/bench/*.log 2>/dev/null
if [ "$what" != bench ]; then
  python3 test/gpu/test_b2b.py --lib $gen/b2b_variants.so 2>&1 | tee "$out/tests.txt"
  echo "-- the same with -DSKETCH_B2B_TMA=0"
  python3 test/gpu/test_b2b.py --lib $gen/b2b_variants_notma.so 2>&1 | tee "$out/tests_notma.txt"
fi
if [ "$what" != tests ]; then
  python3 bench/bench_b2b.py --libs $gen/bench --csv "$out/bench.csv" 2>&1 | tee "$out/bench.txt"
fi
