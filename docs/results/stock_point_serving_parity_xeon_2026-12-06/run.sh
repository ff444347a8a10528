#!/bin/bash
# MobileNetV2 serving: GRAPHI's stock:2x1 (fixed from the first step, and as the autotuner
# adopts it) against TensorFlow's own inter=2 intra=1 process, at 4 and 8 clients.
set -u
# from the repository root, venv active
OUT=$1; mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"; git rev-parse HEAD > "$OUT/commit.txt"
t0=$(date +%s)
timeout 1500 graphi-tf ab --saved-model /tmp/serving_models/mobilenet_v2 --batch 1 \
  --arms stock_default,stock_i2_a1,graphi_auto --graphi-env fixed_stock_2x1:GRAPHI_EXECUTORS=stock:2x1 \
  --clients 4,8 --duration 3 --repeats 5 --out-dir "$OUT/mobilenet_v2" > "$OUT/mobilenet_v2.log" 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - t0 ))" > "$OUT/summary.txt"
