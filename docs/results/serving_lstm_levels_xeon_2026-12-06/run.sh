#!/bin/bash
# LSTM serving at 4 then 8 clients: GRAPHI auto (deciding per load level) against stock
# default and stock inter=2 intra=1, 5 interleaved rounds.
# Usage: run.sh OUT   (from the repository root, venv active, nothing else running)
set -u
OUT=$1; mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"; git rev-parse HEAD > "$OUT/commit.txt"
t0=$(date +%s)
timeout 1500 graphi-tf ab --saved-model /tmp/serving_models/lstm --input frames=1,50,32 \
  --arms stock_default,stock_i2_a1,graphi_auto --clients 4,8 --duration 4 --repeats 5 \
  --out-dir "$OUT/lstm" > "$OUT/lstm.log" 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - t0 ))" > "$OUT/summary.txt"
