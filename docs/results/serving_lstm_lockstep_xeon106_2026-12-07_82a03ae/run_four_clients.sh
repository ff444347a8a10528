#!/bin/bash
set -u
# Usage: run_four_clients.sh OUT_DIR   (from the repository root, venv active, nothing else running)
OUT=$1
mkdir -p $OUT
lscpu > $OUT/lscpu.txt; git rev-parse HEAD > $OUT/commit.txt
t0=$(date +%s)
timeout 1500 graphi-tf ab --saved-model /tmp/serving_models/lstm --input frames=1,50,32 \
  --arms stock_default,stock_i2_a1,graphi_auto --graphi-env fixed_stock:GRAPHI_EXECUTORS=stock \
  --clients 4 --duration 1 --lockstep 12 --repeats 3 \
  --warmup 50 --steps 20 --out-dir $OUT/lstm > $OUT/lstm.log 2>&1
echo "lstm4 rc=$? wall_s=$(( $(date +%s) - t0 ))" >> $OUT/summary.txt
