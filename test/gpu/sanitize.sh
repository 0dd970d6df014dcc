#!/bin/bash
# The GPU suite's ragged-size subset under compute-sanitizer: memcheck (out of
# bounds and misaligned accesses, invalid API use) and racecheck (shared-memory
# races). Each tool must report 0 errors and every test must pass.
#
# On the GPU machine, after test/gpu/generate.sh wrote .gen/gpu where sketchc is:
#   test/gpu/sanitize.sh [memcheck|racecheck|all]          (default: all)
# Env: SANITIZE_TESTS  comma-separated run_tests.py -k patterns (the subset below)
#      (the racecheck pass sets SKETCH_TAIL_SPLIT=0: no convolution tail split and no
#      attention key split over clusters; memcheck runs them)
#      SKETCH_FILES    which generated .cu files to build (default: the suite's)
#      SKETCH_GPU_GEN, SKETCH_GPU_BUILD, JOBS as for test/gpu/run.sh
#
# The subset: sizes that end in partial tiles (1x1x1, odd and unaligned sizes,
# K = 0 and 1), misaligned base pointers, and the rejected arguments (null
# pointers, negative sizes), for every GEMM, SIMT GEMM and convolution kernel,
# plus ragged attention, back-to-back GEMM and back-to-back convolution cases. PyTorch's caching allocator
# is off so that every tensor is its own allocation and memcheck sees an access
# past its end.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${1:-all}
[ "$tools" = all ] && tools="memcheck racecheck"
gen=${SKETCH_GPU_GEN:-$root/.gen/gpu}
build=${SKETCH_GPU_BUILD:-/tmp/sketch_gpu_sanitize}
files=${SKETCH_FILES:-"gemm_* split_auto split_fixed sgemm_* conv_* attention_variants attention_hopper attention_heads attention_chain attention_layouts attention_steps b2b_variants"}
tests=${SANITIZE_TESTS:-"\
test_gemm::test_every_kernel_small_sizes,test_gemm::test_k_zero_and_one,\
test_gemm::test_misaligned_base_pointers,test_gemm::test_element_path_word_loads,\
test_gemm::test_rejects_bad_arguments,\
test_gemm::test_persistent_store_slots,test_gemm_split::test_split_tail,\
test_sgemm::test_every_kernel_small_sizes,test_sgemm::test_k_zero_and_one,\
test_sgemm::test_misaligned_base_pointers,test_sgemm::test_rejects_bad_arguments,\
test_sgemm::test_one_operand_aligned,\
test_sgemm::test_split_k_zero_and_one_and_misaligned,\
test_conv::test_nchw_small_and_odd_shapes,test_conv::test_nhwc_small_and_odd_shapes,\
test_conv::test_misaligned_base_pointers,test_conv::test_rejects_bad_arguments,test_conv::test_nhwc_halo,\
test_conv::test_winograd_small_and_odd_shapes,test_conv::test_winograd_misaligned_base_pointers,\
test_conv::test_winograd_rejects_bad_arguments,\
test_attention::test_scale_and_batch,test_attention::test_rejects_bad_sizes,\
test_attention::test_default_kernels_ragged,test_attention::test_default_kernels_reject_bad_sizes,\
test_attention::test_layouts_kernel_by_keys,test_attention::test_steps_ragged,\
test_attention::test_key_splits,\
test_b2b::test_n64_reference_program,test_b2b::test_offset_operands,test_b2b::test_rejects_bad_sizes,\
test_conv_b2b::test_small_and_odd_shapes,test_conv_b2b::test_rejects_bad_arguments,\
test_conv_b2b::test_window_larger_than_input"}

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "sanitize.sh: compute-sanitizer not found"; exit 1; }

# Build the kernels with line information, so that reports name source lines.
ls "$gen"/*.cu > /dev/null 2>&1 || { echo "sanitize.sh: no generated .cu in $gen (run generate.sh)"; exit 1; }
echo "sanitize.sh: building with -lineinfo"
SKETCH_FILES=$files SKETCH_NVCC_FLAGS=-lineinfo \
  "$root/test/gpu/build_generated.sh" "$gen" "$build" libsketch_gpu_sanitize.so || exit 1

export SKETCH_GPU_LIB="$build/libsketch_gpu_sanitize.so" SKETCH_GPU_GEN="$gen"
export PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONUNBUFFERED=1
export SKETCH_SANITIZER=1  # sketch_gpu.launched_kernels: no profiler under the sanitizer
status=0
for tool in $tools; do
  echo "sanitize.sh: compute-sanitizer --tool $tool"
  log="$build/$tool.log"
  # racecheck did not complete a convolution's split tail (clusters whose producer warps
  # have exited; memcheck and the GPU suite run it): its pass keeps every tail whole, and
  # attention's row tiles too (the same clusters).
  split=1
  [ "$tool" = racecheck ] && split=0
  SKETCH_TAIL_SPLIT=$split "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
    --target-processes all python3 "$root/test/gpu/run_tests.py" -k "$tests" 2>&1 | tee "$log"
  code=${PIPESTATUS[0]}
  echo "sanitize.sh: $tool exit status $code (99: the sanitizer reported errors)"
  # Every test skipped (no GPU, no torch) is no result either.
  grep -q "^[1-9][0-9]* passed, 0 failed" "$log" || code=1
  [ $code -eq 0 ] || status=1
done
exit $status
