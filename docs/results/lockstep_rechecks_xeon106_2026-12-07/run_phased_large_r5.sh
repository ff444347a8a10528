#!/bin/bash
# Phased LSTM large, GRAPHI auto with rounds_long = 5, lockstep, model 106.
source /work/venv312/bin/activate
cd /work/main || exit 1
t0=$(date +%s)
timeout 1500 graphi-tf ab --model phased_lstm --size large --arms stock_default,stock_i2_a1,graphi_auto \
  --graphi-env gs2x1:GRAPHI_EXECUTORS=stock:2x1 \
  --lockstep 4 --repeats 3 --warmup 5 --steps 3 --trace-steps 0 --out-dir /work/runs/s20/phased_large_r5 > /work/runs/s20/phased_large_r5.log 2>&1
echo "phased_large_r5 rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> /work/runs/s20/done
