#!/bin/bash
# Builds generated CUDA into one shared library, for test/gpu/run.sh and
# bench/run.sh: every .cu of GEN (or those matching SKETCH_FILES's patterns),
# compiled in parallel for the arch in GEN/ARCH (one, or a comma-separated list:
# every variant of the files, one -gencode each; a file whose third line names
# its nvcc flags, as sketchc writes it, is built with those) with the ptxas report kept
# beside each object; prints the spill summary (a kernel that spills registers
# fails the build) and links BUILD/LIBRARY.
#   test/gpu/build_generated.sh GEN BUILD LIBRARY   (env: SKETCH_FILES, JOBS, SKETCH_NVCC_FLAGS,
#   SKETCH_ALLOW_SPILLS=1: build even where a kernel spills, for labs)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=$1 build=$2 library=$3
arch=$(cat "$gen/ARCH" 2>/dev/null || echo sm_90a)
gencode=""
for a in ${arch//,/ }; do gencode="$gencode -gencode arch=compute_${a#sm_},code=$a"; done
jobs=${JOBS:-$(nproc)}
mkdir -p "$build"
# the generated files to build: all, or those matching SKETCH_FILES's patterns
list_files() {
  local pattern
  set -f
  for pattern in ${SKETCH_FILES:-*}; do set +f; ls "$gen"/$pattern.cu; set -f; done
  set +f
}
# largest first, so that the biggest file (about a minute of ptxas) does not start last
files=$(list_files | xargs -r ls -S)
echo "building $(echo "$files" | wc -l) files for $arch with $jobs jobs"
echo "$files" | xargs -P "$jobs" -I{} sh -c \
  'nvcc -std=c++17 -O3 $4 -I"$0/runtime/include" -I"$1" $(sed -n "3s/.*runtime\/include \(.*\) -c FILE.cu/\1/p" "{}" | grep . || echo $2) -Xcompiler -fPIC -Xptxas -v -c "{}" -o "$3/$(basename {} .cu).o" 2> "$3/$(basename {} .cu).ptxas" || { cat "$3/$(basename {} .cu).ptxas"; echo "BUILD FAILED: {}"; }' \
  "$root" "$gen" "$gencode" "$build" "${SKETCH_NVCC_FLAGS:-}"
spilled=$(cat "$build"/*.ptxas | grep -cE ' [1-9][0-9]* bytes spill stores')
echo "ptxas: $(cat "$build"/*.ptxas | grep -c 'bytes spill stores') kernels, $spilled with spills"
# ptxas serializing a wgmma group (the wgmma pipeline not kept asynchronous)
grep -l "Potential Performance Loss" "$build"/*.ptxas 2>/dev/null | sed 's/^/ptxas: wgmma serialized in /'
if ((spilled)); then
  grep -B2 -E ' [1-9][0-9]* bytes spill stores' "$build"/*.ptxas | grep -o "function '[^']*'" | sort -u | head -20
  if [ -z "${SKETCH_ALLOW_SPILLS:-}" ]; then
    echo "BUILD FAILED: the kernels above spill registers" >&2
    exit 1
  fi
  echo "(SKETCH_ALLOW_SPILLS: built anyway, for a lab that times a spilling kernel)"
fi
nvcc -shared -o "$build/$library" "$build"/*.o
