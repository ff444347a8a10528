#!/bin/bash
set -u
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)
OUT=$1
mkdir -p $OUT
lscpu > $OUT/lscpu.txt; git rev-parse HEAD > $OUT/commit.txt
t0=$(date +%s)
timeout 2400 python3 tools/overhead_bench.py --out-dir $OUT > $OUT/run.log 2>&1
echo "overhead rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> $OUT/summary.txt
