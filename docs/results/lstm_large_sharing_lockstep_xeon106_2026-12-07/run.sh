#!/bin/bash
# LSTM large: GRAPHI 2x1 with and without sharing, stock:2x1 fixed and auto, against stock inter=2 intra=1, in lockstep.
source /work/venv312/bin/activate
cd /work/main || exit 1
E="GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1"
t0=$(date +%s)
timeout 1500 graphi-tf ab --model lstm --size large --arms stock_i2_a1,graphi_auto \
  --graphi-env g2x1:$E --graphi-env g2x1_noshare:$E,GRAPHI_STEAL_THRESHOLD_NS=off \
  --graphi-env g2x1_noalways:$E,GRAPHI_SHARE_ALWAYS_NS=off --graphi-env gs2x1:GRAPHI_EXECUTORS=stock:2x1 \
  --lockstep 4 --repeats 2 --warmup 5 --steps 3 --trace-steps 0 --out-dir /work/runs/lstm_large_diag > /work/runs/lstm_large_diag.log 2>&1
echo "lstm_large_diag rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> /work/runs/session19.done
