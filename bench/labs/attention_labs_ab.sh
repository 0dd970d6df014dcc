#!/bin/bash
# Prepares same-run A/Bs of the attention lab patches against the checked-out commit, on the
# build machine: for each variant the patches are applied, sketchc rebuilt, bench/ab.sh run
# (the commit's sketchc as the old side) into .gen/ab_VARIANT, and the patches taken back.
#   bench/labs/attention_labs_ab.sh [BUILD_DIR]        (default: build)
# (Written for 94e5394: the descriptors patch has landed since, in bba2965.)
# Then one device call, carrying .gen/ab_descriptors .gen/ab_query .gen/ab_both:
#   bash bench/labs/attention_labs_ab.sh --device
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
labs=$root/bench/labs
variants="descriptors query both"
patches() {
  case $1 in
    descriptors) echo "$labs/wgmma_descriptors/descriptors.patch" ;;
    query) echo "$labs/attention_query_registers/query_registers.patch" ;;
    both) echo "$labs/attention_query_registers/query_registers.patch $labs/wgmma_descriptors/descriptors.patch" ;;
  esac
}

if [ "${1:-}" = --device ]; then
  cd "$root"
  for v in $variants; do
    test/gpu/build_generated.sh ".gen/ab_$v" "/tmp/ab_$v" libab.so > "/tmp/ab_$v.build" 2>&1 &
  done
  wait
  for v in $variants; do
    echo "== $v: $(grep 'ptxas:' "/tmp/ab_$v.build")"
    SKETCH_GPU_LIB="/tmp/ab_$v/libab.so" SKETCH_GPU_GEN=".gen/ab_$v" \
      python3 bench/bench_ab.py --graph --rounds 3
  done
  exit 0
fi

build=${1:-$root/build}
cd "$root"
git diff --quiet -- lib runtime test || { echo "attention_labs_ab.sh: lib, runtime or test has changes"; exit 1; }
base=$(mktemp -d)/sketchc
cp "$build/compiler/sketchc" "$base"
restore() { git checkout -q -- lib runtime test; (cd "$build" && ninja -j2 sketchc > /dev/null); }
trap restore EXIT
for v in $variants; do
  for p in $(patches "$v"); do git apply "$p"; done
  (cd "$build" && ninja -j2 sketchc > /dev/null)
  SKETCHC="$build/compiler/sketchc" SKETCHC_AB="$base" AB_ONLY=attn_ bash bench/ab.sh | tail -1
  # new.cu takes the patched runtime; where the patch changes what old.cu uses (the
  # descriptors), old.cu takes the commit's
  bash "$labs/wgmma_descriptors/pin_runtime.sh" new
  case $v in descriptors | both) bash "$labs/wgmma_descriptors/pin_runtime.sh" old HEAD ;; esac
  rm -rf ".gen/ab_$v" && mv .gen/ab ".gen/ab_$v"
  git checkout -q -- lib runtime test
done
echo "device: bash bench/labs/attention_labs_ab.sh --device (carry .gen/ab_descriptors .gen/ab_query .gen/ab_both)"
