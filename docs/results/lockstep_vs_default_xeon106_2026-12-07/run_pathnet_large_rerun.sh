#!/bin/bash
# Usage: run_pathnet_large_rerun.sh OUT_DIR   (from the repository root, venv active, nothing else running)

OUT=$1
mkdir -p $OUT; lscpu > $OUT/lscpu.txt; git rev-parse HEAD > $OUT/commit.txt
t0=$(date +%s)
timeout 1200 graphi-tf ab --model pathnet --size large --arms stock_default,graphi_auto \
  --graphi-env g2x1:GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1 \
  --lockstep 6 --repeats 3 --warmup 5 --steps 3 --trace-steps 0 --out-dir $OUT/pathnet_large > $OUT/pathnet_large.log 2>&1
echo "pathnet_large rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> $OUT/summary.txt
