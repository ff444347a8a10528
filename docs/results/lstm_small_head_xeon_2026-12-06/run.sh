#!/bin/bash
# The LSTM small training step at HEAD (issue 25): GRAPHI auto against stock's best point
# (inter=2 intra=1) and stock default, 36 interleaved rounds. Usage: run.sh OUT_DIR, from the
# repository root on an otherwise idle machine (~25 min).
set -u
OUT=$1
t0=$(date +%s)
timeout 2700 graphi-tf ab --model lstm --size small --repeats 36 \
    --arms stock_default,stock_i2_a1,graphi_auto --trace-steps 0 \
    --out-dir "$OUT/lstm_small" > "$OUT/lstm_small.log" 2>&1
echo "lstm_small rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> "$OUT/summary.txt"
