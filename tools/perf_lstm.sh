#!/bin/bash
# A perf profile of the bundled LSTM training step (small, graph mode) in its steady state.
#
#   tools/perf_lstm.sh NAME EXECUTOR INTER INTRA [VAR=VALUE ...]
#   tools/perf_lstm.sh graphi_2x1 GRAPHI 0 0 GRAPHI_EXECUTORS=2 GRAPHI_THREADS_PER_EXECUTOR=1 GRAPHI_AUTOTUNE=0
#   tools/perf_lstm.sh stock_i2_a1 DEFAULT 2 1
#
# The step warms up (300 steps), then perf records 10 s of steps (cpu-clock sampling at
# 1999 Hz with call graphs: hardware counters are often missing on VMs) and writes
# $OUT_DIR/NAME.data, NAME.txt (share per library, then the top symbols) and NAME.log (the
# steps and ms per step while recorded). PYTHON (default python3) runs the step; 0 for
# INTER or INTRA is TensorFlow's default pool. "[JIT]" in the report is code generated at run
# time: oneDNN's matmul kernels.
set -euo pipefail
name=$1 executor=$2 inter=$3 intra=$4
shift 4
out_dir=${OUT_DIR:-perf_results}
python=${PYTHON:-python3}
mkdir -p "$out_dir"
log="$out_dir/$name.log"
env "$@" TF_CPP_MIN_LOG_LEVEL=3 "$python" - "$executor" "$inter" "$intra" 14 > "$log" 2>&1 <<'PY' &
import os, sys, time
executor, inter, intra, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
from graphi_tf.lab import models
step = models.build_step("lstm", size="small", mode="graph", executor=executor,
                         inter_op=inter or None, intra_op=intra or None)
for _ in range(300):
    step()
print("READY", os.getpid(), flush=True)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    step()
    n += 1
print("steps", n, "ms/step", 1e3 * (time.perf_counter() - t0) / n, flush=True)
PY
runner=$!
until grep -q READY "$log" 2>/dev/null; do
  kill -0 "$runner" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
pid=$(awk '/READY/{print $2}' "$log")
perf record -e cpu-clock -F 1999 -g -p "$pid" -o "$out_dir/$name.data" -- sleep 10 > /dev/null 2>&1
wait "$runner"
set +o pipefail  # head closes the pipes of the reports early
{
  tail -1 "$log"
  perf report -i "$out_dir/$name.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^$'
  perf report -i "$out_dir/$name.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | head -40 | cut -c1-200
} > "$out_dir/$name.txt"
tail -1 "$log"
