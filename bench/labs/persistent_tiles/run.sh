#!/bin/bash
# The persistent-tiles lab (README.md), on the GPU machine, carrying .gen/ptl (make_lab.sh
# here first). Builds probe.cu (lab.cu and the model's costs) against the patched runtime
# headers and times every row; arguments go to time_tiles.py.
set -e
nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -lcuda \
  --split-compile=0 -I.gen/ptl/include -I.gen/ptl -o /tmp/ptl.so bench/labs/persistent_tiles/probe.cu
python3 bench/labs/persistent_tiles/time_tiles.py /tmp/ptl.so "$@"
