#!/bin/bash
# One device call (carry .gen/ab, made by prepare.sh and patch.py): builds the kernels, times
# them against cuBLAS (lab.py), ncu's figures of each 4096^3 kernel (one run each), and the
# order of the memory instructions among the FFMAs in the W [N, K] kernels' SASS.
#   bash bench/labs/sgemm_stash/run.sh OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-/tmp/sgemm_stash}
"$root/test/gpu/build_generated.sh" "$root/.gen/ab" "$out" libab.so || exit 1
export SKETCH_GPU_LIB=$out/libab.so SKETCH_GPU_GEN=$root/.gen/ab
python3 "$here/lab.py"
ncu --clock-control none --kernel-name regex:ss_ --metrics \
gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio \
  python3 "$here/lab.py" --profile > "$out/ncu.txt" 2>&1
grep -E "ss_n[nt].*\(|duration|bank|wavefronts|inst_executed|issue_active|stalled" "$out/ncu.txt" | sed -E 's/ +/ /g'
# the SASS of each 16-byte kernel<true, true>: runs of one opcode, in order
cuobjdump -sass "$out/libab.so" > "$out/ab.sass"
for f in _Z10ss_nn_simtILb1ELb1E _Z10ss_nt_simtILb1ELb1E _Z17ss_nt_asyncb_simtILb1ELb1E; do
  echo "== $f"
  awk -v f="$f" '/Function :/{on=0} $0 ~ "Function : " f {on=1} on' "$out/ab.sass" |
    grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[T0-9]+\s+)?[A-Z0-9_.]+' | awk '{op=$NF; sub(/\..*/, "", op); print op}' |
    awk '{ if ($1 == last) n++; else { if (last != "") printf "%s%s ", last, (n > 1 ? "x" n : ""); last = $1; n = 1 } }
         END { printf "%s%s\n", last, (n > 1 ? "x" n : "") }' | fold -w 160
done
