#!/usr/bin/env bash
# Builds the static sketchc (scripts/build-static.sh, build/static/) and checks
# it against the ordinary one (build/compiler/): on every example for each
# --arch and --emit, and on every lit test input, both write the same bytes,
# the same messages and the same exit status. Both run with an empty
# environment (no LD_LIBRARY_PATH), JOBS runs at a time. scripts/test.sh (CI)
# runs it.
#   scripts/test-static.sh   (env: SKETCH_BUILD_DIR, JOBS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build-static.sh"
build=${SKETCH_BUILD_DIR:-$root/build}
declare -A sketchc=([dynamic]=$build/compiler/sketchc [static]=$build/static/sketchc)
jobs_max=${JOBS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/dynamic" "$work/static"
# run_both NAME ARGS...: runs both compilers in their own folders of $work,
# keeping stdout, stderr and the exit status under NAME.
run_both() {
  local name=$1 kind status
  shift
  for kind in dynamic static; do
    status=0
    (cd "$work/$kind" && env -i "${sketchc[$kind]}" "$@" >"$name.out" 2>"$name.err") || status=$?
    echo "$status" >"$work/$kind/$name.status"
  done
}
runs=0
# compile NAME ARGS...: run_both in the background, at most jobs_max at a time.
compile() {
  while (($(jobs -rp | wc -l) >= jobs_max)); do
    wait -n
  done
  run_both "$@" &
  runs=$((runs + 1))
}

for example in "$root"/examples/*.sketch; do
  name=$(basename "$example" .sketch)
  for arch in sm_80 sm_90 sm_90a; do
    compile "$name-$arch" "$example" --arch "$arch" -o "$name-$arch.cu"
    compile "$name-$arch-sketch" "$example" --arch "$arch" --emit=sketch
    compile "$name-$arch-mlir" "$example" --arch "$arch" --emit=mlir
    compile "$name-$arch-api" "$example" --arch "$arch" --emit=api
  done
  compile "$name-passes" "$example" --print-after-all --emit=sketch
done
index=0
while IFS= read -r input; do
  index=$((index + 1))
  compile "test$index-cuda" "$input" --emit=cuda
  compile "test$index-sm_90a" "$input" --arch sm_90a --emit=cuda
  compile "test$index-sketch" "$input" --emit=sketch
done < <(find "$root/test" -name '*.sketch' -not -path '*/gpu/*' | sort)
wait

if ! diff -r "$work/dynamic" "$work/static"; then
  echo "test-static: the static sketchc's output differs from build/'s (above)" >&2
  exit 1
fi
echo "test-static: $runs runs, $(find "$work/static" -type f | wc -l) files, the same from both"
