# What the labs' run.sh share (sourced on the GPU machine, in the repository root): each
# builds bench/ab.sh's directories and times them with bench/bench_ab.py, a log each in $OUT.
out=${OUT:-/tmp}

# lab_build DIR...: .gen/DIR into /tmp/DIR/libDIR.so (exits on a failed build)
lab_build() {
  local d
  for d in "$@"; do
    JOBS=16 test/gpu/build_generated.sh .gen/$d /tmp/$d lib$d.so > "$out/build_$d.log" 2>&1 ||
      { tail -20 "$out/build_$d.log"; exit 1; }
  done
}

# lab_ab DIR LOG ARGS...: bench_ab.py ARGS on DIR's build, into $out/LOG.log
lab_ab() {
  local dir=$1 log=$2
  shift 2
  SKETCH_GPU_LIB=/tmp/$dir/lib$dir.so SKETCH_GPU_GEN=.gen/$dir python3 bench/bench_ab.py "$@" > "$out/$log.log" 2>&1
}

# lab_summary: every log's errors and timed rounds
lab_summary() {
  grep -H "error\|round" "$out"/*.log | sed 's/.*out\///'
}

# lab_conv_layers DIR...: each build's nhwc convolutions against their twins under CUDA graphs:
# odd shapes at N = 3 (3x3 strides 1 and 2, 1x1), every bench layer at N = 64, the stride-2
# layer at N = 128; logs odd_DIR, n64_DIR, n128_DIR
lab_conv_layers() {
  local odd="128,57,128,3,2,1;64,31,72,3,2,1;128,14,256,3,2,1;64,9,64,3,2,1;128,15,136,3,1,1;64,7,128,3,1,1;128,9,192,1,1,0;64,13,128,1,1,0"
  local f
  for f in "$@"; do
    lab_ab $f odd_$f --graph --rounds 1 --only bc_ --conv-batch 3 --conv-layers "$odd"
    lab_ab $f n64_$f --graph --rounds 2 --only bc_
    lab_ab $f n128_$f --graph --rounds 2 --only s2p1 --conv-batch 128
  done
}
