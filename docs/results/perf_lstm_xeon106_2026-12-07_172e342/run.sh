#!/bin/bash
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)
export OUT_DIR=$1
mkdir -p $OUT_DIR
lscpu > $OUT_DIR/lscpu.txt; git rev-parse HEAD > $OUT_DIR/commit.txt
for i in 1 2; do
  timeout 300 tools/perf_lstm.sh graphi_2x1_$i GRAPHI 0 0 GRAPHI_EXECUTORS=2 GRAPHI_THREADS_PER_EXECUTOR=1 GRAPHI_AUTOTUNE=0
  timeout 300 tools/perf_lstm.sh stock_i2_a1_$i DEFAULT 2 1
done
echo "perf done $(date -u +%H:%M:%S)" >> $OUT_DIR/summary.txt
