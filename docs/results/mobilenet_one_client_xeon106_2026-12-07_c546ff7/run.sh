#!/bin/bash
# MobileNetV2 SavedModel, batch 1, one client: GRAPHI auto against its candidates fixed and stock's points.
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)
set -u
OUT=$1
mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"; git rev-parse HEAD > "$OUT/commit.txt"
[ -d /tmp/serving_models/mobilenet_v2 ] || python3 tools/export_serving_models.py --out /tmp/serving_models > "$OUT/export.log" 2>&1
t0=$(date +%s)
timeout 1500 graphi-tf ab --saved-model /tmp/serving_models/mobilenet_v2 --batch 1 \
  --arms stock_i1_a1,stock_i2_a1,graphi_auto \
  --graphi-env fixed_1x1:GRAPHI_EXECUTORS=1,GRAPHI_THREADS_PER_EXECUTOR=1 \
  --graphi-env fixed_2x1:GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1 \
  --graphi-env fixed_stock2x1:GRAPHI_EXECUTORS=stock:2x1 \
  --clients 1 --duration 1 --lockstep 10 --repeats 3 --warmup 50 --steps 20 \
  --out-dir "$OUT/ab" > "$OUT/ab.log" 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - t0 ))" > "$OUT/summary.txt"
