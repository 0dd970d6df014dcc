#!/usr/bin/env bash
# check-static.sh TOOL...: each TOOL (sketchc, sketch-opt) loads no LLVM, MLIR or
# C++ runtime library (ldd), so it runs where MLIR is not installed, such as
# the GPU machine. A ctest test (tools-link-statically).
set -euo pipefail
for tool in "$@"; do
  libs=$(ldd "$tool" 2>&1 || true)
  if grep -E 'libLLVM|libMLIR|libstdc\+\+|libgcc_s|not found' <<<"$libs"; then
    echo "check-static: $tool loads the libraries above; it should link them statically" >&2
    exit 1
  fi
  echo "check-static: $tool ($(stat -c %s "$tool") bytes) loads:"
  sed 's/^\s*/  /' <<<"$libs"
done
