#!/usr/bin/env bash
# Completion is a fixpoint: for each FILE, with P1 = complete(FILE) printed as
# a sketch and P2 = complete(P1), P2 is byte for byte P1, the MLIR of the two
# completions is identical, and so are the CUDA files (.cu and .h) compiled
# from FILE and from P1.
#   usage: fixpoint.sh TMP FILE...
# Every step compiles for one architecture, $SKETCH_ARCH (sm_80 unless set): a
# completed sketch is one architecture's plan (--arch with a list prints one per
# variant, which is not one program).
# Prints "ok FILE" or "FAIL FILE: why" per file; exits 1 if any failed.
set -u
tmp=$1
shift
mkdir -p "$tmp"
failed=0
arch=${SKETCH_ARCH:-sm_80}

fail() {
  echo "FAIL $1: $2"
  failed=1
}

for file in "$@"; do
  base=$tmp/$(basename "$file" .sketch)
  # sketchc picks the parser by extension, so every printed file ends in .sketch.
  if ! sketchc --arch "$arch" "$file" --emit=sketch > "$base.1.sketch"; then
    fail "$file" "does not complete"; continue
  fi
  if ! sketchc --arch "$arch" "$base.1.sketch" --emit=sketch > "$base.2.sketch"; then
    fail "$file" "its completed form does not complete"; continue
  fi
  if ! diff -u "$base.1.sketch" "$base.2.sketch"; then
    fail "$file" "completing the completed form changes it"; continue
  fi
  sketchc --arch "$arch" "$file" --emit=mlir > "$base.1.mlir"
  sketchc --arch "$arch" "$base.1.sketch" --emit=mlir > "$base.2.mlir"
  if ! diff -u "$base.1.mlir" "$base.2.mlir"; then
    fail "$file" "the MLIR of the two completions differs"; continue
  fi
  name=$(basename "$file" .sketch)
  mkdir -p "$tmp/cuda1" "$tmp/cuda2"
  if ! sketchc --arch "$arch" "$file" -o "$tmp/cuda1/$name.cu"; then
    fail "$file" "does not compile to CUDA"; continue
  fi
  if ! sketchc --arch "$arch" "$base.1.sketch" -o "$tmp/cuda2/$name.cu"; then
    fail "$file" "its completed form does not compile to CUDA"; continue
  fi
  if ! diff -u "$tmp/cuda1/$name.cu" "$tmp/cuda2/$name.cu" ||
     ! diff -u "$tmp/cuda1/$name.h" "$tmp/cuda2/$name.h"; then
    fail "$file" "the CUDA of the file and of its completed form differ"; continue
  fi
  echo "ok $file"
done
exit $failed
