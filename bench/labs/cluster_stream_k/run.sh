#!/bin/bash
# The cluster stream-K lab (README.md), on the GPU machine, carrying .gen/csk (make_lab.sh
# here first): builds the lab's kernel and the default into one library and times them;
# arguments go to time_streamk.py.
set -e
nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -lcuda \
  -Xptxas -v -I.gen/csk/include -I.gen/csk -o /tmp/csk.so \
  bench/labs/cluster_stream_k/streamk.cu .gen/csk/lab.cu 2>&1 | grep -E "spill|registers" | sort | uniq -c
python3 bench/labs/cluster_stream_k/time_streamk.py /tmp/csk.so "$@"
