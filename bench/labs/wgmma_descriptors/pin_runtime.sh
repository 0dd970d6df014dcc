#!/bin/bash
# After bench/ab.sh: compiles one side of .gen/ab against its own copy of the runtime, in
# .gen/ab/rt_SIDE (else both sides include runtime/include as the device's checkout has it):
#   old: the runtime of BASE (default HEAD), for an A/B of a runtime change;
#   new: the working tree's, for a change not committed (the device gets the commit's).
#   bench/labs/wgmma_descriptors/pin_runtime.sh old|new [BASE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
side=$1
dst=$root/.gen/ab/rt_$side
rm -rf "$dst" && mkdir -p "$dst"
case $side in
  old) git -C "$root" archive "${2:-HEAD}" runtime/include/sketch | tar -x -C "$dst" --strip-components=3 ;;
  new) cp "$root"/runtime/include/sketch/* "$dst"/ ;;
  *) echo "pin_runtime.sh: old or new, not $side"; exit 1 ;;
esac
# the headers include each other from their own folder; SIDE.cu includes them from rt_SIDE/
sed -i 's|#include "sketch/|#include "|' "$dst"/*
sed -i "s|#include \"sketch/|#include \"rt_$side/|" "$root/.gen/ab/$side.cu"
echo "$side.cu now includes $(ls "$dst" | wc -l) runtime headers from .gen/ab/rt_$side"
