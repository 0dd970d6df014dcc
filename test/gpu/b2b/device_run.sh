#!/bin/bash
# One device session for the b2b backend: compiles the generated CUDA under
# .gen/b2b (made here with sketchc: see test/gpu/b2b/README.md), runs the GPU tests and
# the benchmark. Usage on the GPU machine, from the repository root:
#   bash test/gpu/b2b/device_run.sh [tests|bench|all]
set -u
what=${1:-all}
gen=.gen/b2b
out=${OUT:-/tmp/b2b-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
arch="-gencode arch=compute_90a,code=sm_90a"
compile() { # file.cu -> file.so, ptxas report beside it
  nvcc -std=c++17 -O3 $arch -Iruntime/include -Xcompiler -fPIC -shared "$1" -o "${1%.cu}.so" \
    -Xptxas -v > "${1%.cu}.log" 2>&1 || echo "COMPILE FAILED: $1"
}
export -f compile; export arch
if [ "$what" != tests ]; then
  ls $gen/bench/*.cu | xargs -P 16 -I{} bash -c 'compile {}'
  grep -h "spill" $gen/bench/*.log | sort | uniq -c
fi
if [ "$what" != bench ]; then
  [ -f $gen/b2b_variants.so ] || compile $gen/b2b_variants.cu
  python3 test/gpu/test_b2b.py --lib $gen/b2b_variants.so 2>&1 | tee "$out/tests.txt"
fi
if [ "$what" != tests ]; then
  python3 bench/bench_b2b.py --libs $gen/bench --csv "$out/bench.csv" 2>&1 | tee "$out/bench.txt"
fi
