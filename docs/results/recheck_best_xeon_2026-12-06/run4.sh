#!/bin/bash
# Part 4: after the runoff began setting one round aside (the commit in commit_run4.txt): the
# LSTM small step, GRAPHI auto against stock inter=2 intra=1, 12 rounds. Usage: run4.sh OUT_DIR.
set -u
OUT=$1
git rev-parse HEAD > "$OUT/commit_run4.txt"
t0=$(date +%s)
timeout 1800 graphi-tf ab --model lstm --size small --repeats 12 --arms stock_i2_a1,graphi_auto \
    --trace-steps 0 --out-dir "$OUT/lstm_small_set_aside" > "$OUT/lstm_small_set_aside.log" 2>&1
echo "lstm_small_set_aside rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> "$OUT/summary.txt"
git add "$OUT" && git commit -q -m "results: lstm_small_set_aside, after the runoff sets one round aside (2-vCPU Xeon)" -- "$OUT" || true
