#!/bin/bash
# check_ptxas.sh SKETCHC NVCC RUNTIME_INCLUDE WORKDIR DIR...
# Compiles every .sketch under the DIRs to CUDA (sketchc) and with nvcc for
# each architecture of $ARCHS (default sm_80 and sm_90a; -Xptxas -v), JOBS
# (default nproc) at a time. Prints one line per file and architecture: "ok",
# or what failed (sketchc, nvcc, a compiler warning, a kernel with spills, or one
# whose wgmma ptxas serialized: C7515). Exits 1 when
# anything failed. The lit tests run it, and test/gpu/run.sh on the GPU machine.
set -u
sketchc=$1 nvcc=$2 runtime=$3 work=$4
shift 4
mkdir -p "$work"
one() {  # one SKETCH ARCH
  local sketch=$1 arch=$2
  local name out
  name=$(basename "$(dirname "$sketch")")_$(basename "$sketch" .sketch)_$arch
  out=$work/$name
  if ! "$sketchc" "$sketch" --arch "$arch" -o "$out.cu" 2> "$out.sketchc"; then
    echo "FAIL sketchc $sketch $arch: $(head -1 "$out.sketchc")"; return 1
  fi
  local code="arch=compute_${arch#sm_},code=$arch"
  if ! "$nvcc" -std=c++17 -O3 -I"$runtime" -I"$work" -gencode "$code" -Xptxas -v -c "$out.cu" \
       -o "$out.o" > "$out.ptxas" 2>&1; then
    echo "FAIL nvcc $sketch $arch: $(grep -m1 error "$out.ptxas")"; return 1
  fi
  local spills
  spills=$(grep -B2 -E ' [1-9][0-9]* bytes spill (stores|loads)' "$out.ptxas" | grep -o "function '[^']*'" | sort -u | tr '\n' ' ')
  if [ -n "$spills" ]; then echo "FAIL spills $sketch $arch: $spills"; return 1; fi
  local serialized  # ptxas C7515: the wgmma of a kernel run one after another
  serialized=$(grep -o "(C7515).*in the function '[^']*'" "$out.ptxas" | grep -o "'[^']*'" | sort -u | tr '\n' ' ')
  if [ -n "$serialized" ]; then echo "FAIL serialized wgmma $sketch $arch: $serialized"; return 1; fi
  local warning  # the generated code compiles without warnings
  warning=$(grep -m1 -E 'warning #[0-9]+-D' "$out.ptxas")
  if [ -n "$warning" ]; then echo "FAIL warning $sketch $arch: $warning"; return 1; fi
  echo "ok $sketch $arch ($(grep -c 'bytes spill stores' "$out.ptxas") kernels)"
}
export -f one
export sketchc nvcc runtime work
for sketch in $(find "$@" -name '*.sketch' -not -path '*/Inputs/*' | sort); do
  for arch in ${ARCHS:-sm_80 sm_90a}; do echo "$sketch $arch"; done
done | xargs -P "${JOBS:-$(nproc)}" -n 2 bash -c 'one "$0" "$1"' > "$work/report.txt"
status=$?
sort "$work/report.txt"
exit $(( status != 0 ))
