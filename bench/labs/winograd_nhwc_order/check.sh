#!/bin/bash
# On the GPU machine (carry .gen/gpu): test_conv's Winograd tests, then compute-sanitizer memcheck on
# the ragged and misaligned ones and racecheck on the misaligned one (4 kernels, nhwc F(4x4) and
# F(2x2) among them). Logs in $OUT.
set -u
JOBS=16 SKETCH_FILES='conv_winograd' test/gpu/build_generated.sh .gen/gpu /tmp/wgt libwgt.so > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
grep ptxas $OUT/build.log | tail -1
SKETCH_GPU_LIB=/tmp/wgt/libwgt.so SKETCH_GPU_GEN=.gen/gpu python3 test/gpu/run_tests.py -k test_conv::test_winograd > $OUT/tests.log 2>&1; tail -6 $OUT/tests.log
SKETCH_FILES=conv_winograd JOBS=16 SANITIZE_TESTS='test_conv::test_winograd_small_and_odd_shapes,test_conv::test_winograd_misaligned_base_pointers' timeout 200 bash test/gpu/sanitize.sh memcheck > $OUT/memcheck.log 2>&1; echo memcheck rc=$?; grep -E "PASS|FAIL|passed|ERROR SUMMARY|exit status" $OUT/memcheck.log | tail -6
SKETCH_FILES=conv_winograd JOBS=16 SANITIZE_TESTS='test_conv::test_winograd_misaligned_base_pointers' timeout 150 bash test/gpu/sanitize.sh racecheck > $OUT/racecheck.log 2>&1; echo racecheck rc=$?; grep -E "PASS|FAIL|passed|RACECHECK SUMMARY|exit status" $OUT/racecheck.log | tail -6
