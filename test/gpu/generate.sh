#!/bin/bash
# Compiles every sketch of the GPU suite (test/gpu/**/*.sketch) and every
# example (examples/**/*.sketch) to CUDA in .gen/gpu/, one .cu and .h per sketch. Run it here, where sketchc is built;
# test/gpu/run.sh then builds and runs them on the GPU machine.
#   SKETCHC=path/to/sketchc ARCH=sm_90a [SKETCH_GEN_OUT=dir] test/gpu/generate.sh
source "$(dirname "$0")/generate_common.sh"
generate_begin "$root/.gen/gpu"
for sketch in $(find "$root/test/gpu" -name '*.sketch' | sort); do
  generate_one "$sketch" "$arch" "$(basename "$sketch" .sketch)"
done
# The examples too (test_examples.py checks the GEMM ones), as example_NAME.cu, for
# sketchc's default list (sm_80,sm_90a): their host functions pick the variant at run time.
for sketch in $(find "$root/examples" -name '*.sketch' | sort); do
  generate_one "$sketch" "${EXAMPLES_ARCH:-sm_80,$arch}" "example_$(basename "$sketch" .sketch)"
done
generate_static_sketchc
generate_end
