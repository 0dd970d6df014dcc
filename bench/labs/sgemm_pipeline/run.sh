#!/bin/bash
# Needs .gen/sgl/bench_f32_gemm_1.cu (sketchc bench/gemm/bench_f32_gemm_1.sketch --arch sm_90a).
# One device call: builds the lab, checks and times the variants against cuBLAS, then ncu's
# view of each kernel (one run each) and the default's instruction mix (cuobjdump).
#   bash bench/labs/sgemm_pipeline/run.sh OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/sgemm_lab}
mkdir -p "$out"
nvcc -std=c++17 -O3 -I"$here/../../../runtime/include" -gencode arch=compute_90a,code=sm_90a \
  -Xptxas -v -o "$out/sgemm" "$here/sgemm.cu" "$here/../../../.gen/sgl/bench_f32_gemm_1.cu" -lcublas > "$out/ptxas.txt" 2>&1 || { cat "$out/ptxas.txt"; exit 1; }
grep -E "registers|spill" "$out/ptxas.txt" | paste - - | sed 's/ptxas info    ://g'
"$out/sgemm"
ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section LaunchStats --section Occupancy \
  --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio "$out/sgemm" --once > "$out/ncu.txt" 2>&1
grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|Issue Slots Busy|Issued Ipc|Executed Ipc A|No Eligible|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|stalled" "$out/ncu.txt" | head -250
cuobjdump -sass "$out/sgemm" > "$out/sgemm.sass"
for f in bg_f32_sgemm_simt sgemm_xmILi256ELi128ELi8ELi16ELi16ELi3ELi1E; do echo "== $f"
awk -v f="$f" '/Function :/{on=0} $0 ~ "Function : .*" f {on=1} on' "$out/sgemm.sass" |
  grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[T0-9]+\s+)?[A-Z0-9_.]+' | awk '{op=$NF; sub(/\..*/, "", op); print op}' | sort | uniq -c | sort -rn | head -25
done
