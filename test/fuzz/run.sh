#!/usr/bin/env bash
# Builds the libFuzzer target fuzz_frontend (clang, ASan+UBSan, asserts on) in
# build-fuzz/ and fuzzes the front end and the completion passes with a corpus
# seeded from examples/*.sketch and every test/**/*.sketch.
#
# Usage: test/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]   (default 600 s)
# Env:   SKETCH_FUZZ_BUILD (build dir, default build-fuzz), CXX (default clang++-19),
#        SKETCH_FUZZ_JOBS (ninja -j, default 1), SKETCH_FUZZ_BACKEND=1 and
#        SKETCH_FUZZ_ROUNDTRIP=1 (see fuzz_frontend.cpp).
# Crashes, hangs (> 10 s per input), leaks and out-of-memory inputs are written
# to $BUILD/fuzz-artifacts/; reproduce one with: $BUILD/test/fuzz/fuzz_frontend FILE
# Exit status: 0 when the run was clean, libFuzzer's status otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-600}
shift || true
build=${SKETCH_FUZZ_BUILD:-$root/build-fuzz}
cxx=${CXX:-clang++-19}

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DSKETCH_FUZZ=ON
fi
nice ninja -C "$build" -j "${SKETCH_FUZZ_JOBS:-1}" fuzz_frontend

# The seed corpus: every sketch of the repository, one file each.
seeds=$build/fuzz-seeds
corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
mkdir -p "$seeds" "$corpus" "$artifacts"
find "$root/examples" "$root/test" -name '*.sketch' -not -path '*/fuzz-*' -print0 |
  while IFS= read -r -d '' file; do
    cp "$file" "$seeds/$(echo "${file#$root/}" | tr '/' '_')"
  done
cp "$root"/test/fuzz/sketch.dict "$build/fuzz.dict"

echo "fuzz: $(ls "$seeds" | wc -l) seeds, $(ls "$corpus" | wc -l) corpus entries, ${seconds} s"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The new entries go to $corpus (kept between runs); the seeds are only read.
status=0
"$build/test/fuzz/fuzz_frontend" "$corpus" "$seeds" \
  -dict="$build/fuzz.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" || status=$?
echo "fuzz: exit status $status; artifacts in $artifacts: $(ls "$artifacts" | wc -l)"
exit $status
