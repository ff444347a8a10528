#!/bin/bash
set -u
# Usage: run_all_loads.sh OUT_DIR   (from the repository root, venv active, nothing else running)
OUT=$1
mkdir -p $OUT
lscpu > $OUT/lscpu.txt; git rev-parse HEAD > $OUT/commit.txt
t0=$(date +%s)
timeout 1500 graphi-tf ab --saved-model /tmp/serving_models/lstm --input frames=1,50,32 \
  --arms stock_default,stock_i1_a1,stock_i1_a2,stock_i2_a1,graphi_auto --clients 1,4,8 --duration 1 --lockstep 6 --repeats 3 \
  --warmup 50 --steps 20 --out-dir $OUT/lstm > $OUT/lstm.log 2>&1
echo "lstm rc=$? wall_s=$(( $(date +%s) - t0 ))" >> $OUT/summary.txt
