#!/usr/bin/env bash
# Round-trips sketch files through the parser and the printer.
#   usage: roundtrip.sh [--canonical] [--complete] TMP FILE...
# For each FILE, with P1 = print(parse(FILE)) and P2 = print(parse(P1)):
#   - P1 parses again and P2 is byte for byte P1 (the printer is a fixpoint);
#   - the MLIR of FILE and of P1 are identical (printing loses nothing);
#   - with --canonical, FILE without its comment lines, its blank lines squeezed
#     to one and none at either end, is P1 (the file is already written the way
#     the printer writes it: one blank line between kernels);
#   - with --complete, the completed program C1 (`--emit=sketch`) is valid
#     input, completing it again gives C1 byte for byte, and the completed
#     MLIR of FILE and of C1 are identical.
# Reports every failing file and exits 1 if any failed. Completion is for one
# architecture, $SKETCH_ARCH (sm_80 unless set): a completed sketch is one
# architecture's plan.
set -u
canonical=0
complete=0
while true; do
  case "${1:-}" in
    --canonical) canonical=1; shift ;;
    --complete) complete=1; shift ;;
    *) break ;;
  esac
done
tmp=$1
shift
mkdir -p "$tmp"
failed=0
arch=${SKETCH_ARCH:-sm_80}

fail() {
  echo "FAIL $1: $2"
  failed=1
}

# Checks one file; returns 1 after reporting its first failure.
check() {
  local file=$1
  local base=$tmp/$(basename "$file" .sketch)
  # sketchc picks the parser by extension, so every printed file ends in .sketch.
  sketchc --arch "$arch" "$file" --emit=sketch --parse-only > "$base.1.sketch" ||
    { fail "$file" "does not parse"; return 1; }
  sketchc --arch "$arch" "$base.1.sketch" --emit=sketch --parse-only > "$base.2.sketch" ||
    { fail "$file" "its print does not parse"; return 1; }
  diff -u "$base.1.sketch" "$base.2.sketch" ||
    { fail "$file" "printing is not a fixpoint"; return 1; }
  sketchc --arch "$arch" "$file" --emit=mlir --parse-only > "$base.0.mlir" &&
    sketchc --arch "$arch" "$base.1.sketch" --emit=mlir --parse-only > "$base.1.mlir" &&
    diff -u "$base.0.mlir" "$base.1.mlir" ||
    { fail "$file" "the MLIR of the file and of its print differ"; return 1; }
  if [ "$canonical" = 1 ]; then
    # without comments, blank lines squeezed to one (between kernels), none at the ends
    grep -v -e '^ *#' "$file" | cat -s | sed -e '/./,$!d' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' \
      > "$base.stripped"
    diff -u "$base.stripped" "$base.1.sketch" ||
      { fail "$file" "not written in canonical form"; return 1; }
  fi
  if [ "$complete" = 1 ]; then
    sketchc --arch "$arch" "$file" --emit=sketch > "$base.c1.sketch" ||
      { fail "$file" "does not complete"; return 1; }
    sketchc --arch "$arch" "$base.c1.sketch" --emit=sketch > "$base.c2.sketch" ||
      { fail "$file" "its completed form does not compile"; return 1; }
    diff -u "$base.c1.sketch" "$base.c2.sketch" ||
      { fail "$file" "completing the completed form changes it"; return 1; }
    sketchc --arch "$arch" "$file" --emit=mlir > "$base.c1.mlir" &&
      sketchc --arch "$arch" "$base.c1.sketch" --emit=mlir > "$base.c2.mlir" &&
      diff -u "$base.c1.mlir" "$base.c2.mlir" ||
      { fail "$file" "the completed MLIR of the file and of its completed form differ"; return 1; }
  fi
  echo "ok $file"
}

for file in "$@"; do
  check "$file"
done
exit $failed
