#!/bin/bash
# Part 2: the LSTM small training step, GRAPHI auto against stock inter=2 intra=1 only, 16 rounds
# (run.sh's 8 rounds of three arms left 0.91 ± 0.26). Usage: run2.sh OUT_DIR (as run.sh).
set -u
OUT=$1
t0=$(date +%s)
timeout 1800 graphi-tf ab --model lstm --size small --repeats 16 --arms stock_i2_a1,graphi_auto \
    --trace-steps 0 --out-dir "$OUT/lstm_small_16" > "$OUT/lstm_small_16.log" 2>&1
echo "lstm_small_16 rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> "$OUT/summary.txt"
git add "$OUT" && git commit -q -m "results: recheck at HEAD, lstm_small_16 (2-vCPU Xeon)" -- "$OUT" || true
