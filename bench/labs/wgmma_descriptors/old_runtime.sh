#!/bin/bash
# After bench/ab.sh: compiles .gen/ab/old.cu against the runtime of BASE (default HEAD), copied
# into .gen/ab/rt_old, so that an A/B of a runtime change compares both sides' headers (else
# both include the working tree's runtime/include).
#   bench/labs/wgmma_descriptors/old_runtime.sh [BASE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
dst=$root/.gen/ab/rt_old
rm -rf "$dst" && mkdir -p "$dst"
git -C "$root" archive "${1:-HEAD}" runtime/include/sketch | tar -x -C "$dst" --strip-components=3
# the headers include each other from their own folder; old.cu includes them from rt_old/
sed -i 's|#include "sketch/|#include "|' "$dst"/*
sed -i 's|#include "sketch/|#include "rt_old/|' "$root/.gen/ab/old.cu"
echo "old.cu now includes $(ls "$dst" | wc -l) headers of ${1:-HEAD} from .gen/ab/rt_old"
