#!/bin/bash
# The tail-slices lab (README.md), on the GPU machine, carrying .gen/tsl, after here:
#   sketchc bench/labs/tail_slices/lab.sketch --arch sm_90a -o .gen/tsl/lab.cu
# Builds lab.cu twice: with probe.cu against runtime/include (tail slices 2 to 8), and against a copy
# whose sketch::tail_split takes 2 or 4 (the rule before), then times both. The first
# argument picks a phase: build, time or all (the default); the rest go to time_slices.py.
set -e
phase=${1:-all}
[ $# -gt 0 ] && shift
if [ "$phase" != time ]; then
old=/tmp/tsl_old_include
rm -rf $old && cp -r runtime/include $old
sed -i -e 's/kMaxTailSlices = 8;/kMaxTailSlices = 4;/' -e 's/++slices) {/slices *= 2) {/' $old/sketch/host.h
grep -q "slices \*= 2) {" $old/sketch/host.h
flags="-std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -lcuda"
nvcc $flags -Iruntime/include -I.gen/tsl -o /tmp/tsl_new.so bench/labs/tail_slices/probe.cu & new=$!
nvcc $flags -I$old -o /tmp/tsl_old.so .gen/tsl/lab.cu & built_old=$!
wait $new && wait $built_old
fi
[ "$phase" = build ] && exit 0
python3 bench/labs/tail_slices/time_slices.py /tmp/tsl_new.so /tmp/tsl_old.so "$@"
