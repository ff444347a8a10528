#!/bin/bash
set -u
# from the repository root, venv active
OUT=$1; mkdir -p "$OUT"; : > "$OUT/probe.jsonl"
export TF_CPP_MIN_LOG_LEVEL=3
for r in 1 2 3; do
  timeout 120 python docs/results/stock_point_serving_parity_xeon_2026-12-06/thread_cpu_probe.py tf /tmp/serving_models/mobilenet_v2 8 6 >> "$OUT/probe.jsonl" 2>>"$OUT/err.log"
  GRAPHI_EXECUTORS=stock:2x1 GRAPHI_AUTOTUNE=0 GRAPHI_CACHE_DIR=$(mktemp -d) timeout 120 python docs/results/stock_point_serving_parity_xeon_2026-12-06/thread_cpu_probe.py graphi /tmp/serving_models/mobilenet_v2 8 6 >> "$OUT/probe.jsonl" 2>>"$OUT/err.log"
done
echo done >> "$OUT/probe.jsonl"
