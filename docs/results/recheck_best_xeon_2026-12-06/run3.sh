#!/bin/bash
# Part 3: the LSTM small step, GRAPHI auto and fixed stock:2x1 through GRAPHI (no autotuning)
# against stock inter=2 intra=1, 12 rounds: does a process that explored run the point it
# adopted as fast as one that ran it from the start? Usage: run3.sh OUT_DIR (as run.sh).
set -u
OUT=$1
t0=$(date +%s)
timeout 1800 graphi-tf ab --model lstm --size small --repeats 12 --arms stock_i2_a1,graphi_auto \
    --graphi-env gp21:GRAPHI_EXECUTORS=stock:2x1 --trace-steps 0 \
    --out-dir "$OUT/lstm_small_fixed_point" > "$OUT/lstm_small_fixed_point.log" 2>&1
echo "lstm_small_fixed_point rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> "$OUT/summary.txt"
git add "$OUT" && git commit -q -m "results: recheck at HEAD, lstm_small_fixed_point (2-vCPU Xeon)" -- "$OUT" || true
