#!/bin/bash
# Lockstep rechecks of the table's cases where GRAPHI auto ran below stock default (model 106).
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)

OUT=$1
mkdir -p $OUT; lscpu > $OUT/lscpu.txt; git rev-parse HEAD > $OUT/commit.txt
E="GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1"
run() {  # name, then ab args
  local name=$1; shift
  local t0=$(date +%s)
  timeout 1500 graphi-tf ab "$@" --trace-steps 0 --out-dir $OUT/$name > $OUT/$name.log 2>&1
  echo "$name rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> $OUT/summary.txt
}
run googlenet_medium --model googlenet --size medium --arms stock_default,stock_i2_a1,graphi_auto \
  --graphi-env g2x1:$E --lockstep 8 --repeats 3 --warmup 30 --steps 5
run phased_lstm_medium --model phased_lstm --size medium --arms stock_default,stock_i2_a1,graphi_auto \
  --lockstep 8 --repeats 3 --warmup 30 --steps 5
echo chain_done >> $OUT/summary.txt
