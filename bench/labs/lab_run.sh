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
