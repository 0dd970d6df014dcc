#!/bin/bash
# On the GPU machine (carry .gen/ab, .gen/gpu): the Winograd GPU tests on the new kernels,
# then the A/B of the nhwc (and, as a control, nchw) F(4x4) defaults on the bench's four
# 3x3 stride-1 layers at N = 64 and N = 32, CUDA graphs. Logs in $OUT.
cd "$(dirname "$0")/../../.." || exit 1
source bench/labs/lab_run.sh
JOBS=16 SKETCH_FILES='conv_winograd' test/gpu/build_generated.sh .gen/gpu /tmp/wgt libwgt.so \
  > "$out/build_tests.log" 2>&1 || { tail -20 "$out/build_tests.log"; exit 1; }
grep "ptxas" "$out/build_tests.log" | tail -2
SKETCH_GPU_LIB=/tmp/wgt/libwgt.so SKETCH_GPU_GEN=.gen/gpu python3 test/gpu/run_tests.py \
  -k test_conv::test_winograd > "$out/tests.log" 2>&1
tail -8 "$out/tests.log"
lab_build ab
lab_ab ab n64 --graph --rounds 3 --only s1p1
lab_ab ab n32 --graph --rounds 2 --only s1p1 --conv-batch 32
lab_summary
