#!/usr/bin/env bash
# Builds sketchc (installing what is missing) and runs every test through ctest:
# the lit suite one test per file, and the GPU suite (skipped without a GPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)"
