#!/bin/bash
# Session 20: lockstep rechecks at 3aa0099 (always-share off), model 106.
source /work/venv312/bin/activate
cd /work/main || exit 1
E="GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1"
run() {  # name, then ab args
  local name=$1; shift
  local t0=$(date +%s)
  timeout 1500 graphi-tf ab "$@" --trace-steps 0 --out-dir /work/runs/s20/$name > /work/runs/s20/$name.log 2>&1
  echo "$name rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> /work/runs/s20/done
}
run lstm_medium --model lstm --size medium --arms stock_i2_a1,graphi_auto \
  --graphi-env g2x1:$E --graphi-env gs2x1:GRAPHI_EXECUTORS=stock:2x1 \
  --lockstep 8 --repeats 3 --warmup 30 --steps 5
run phased_large --model phased_lstm --size large --arms stock_i2_a1,graphi_auto \
  --graphi-env g2x1:$E --graphi-env gs2x1:GRAPHI_EXECUTORS=stock:2x1 \
  --lockstep 4 --repeats 2 --warmup 5 --steps 3
run pathnet_large --model pathnet --size large --arms stock_i1_a2,stock_i2_a1,graphi_auto \
  --graphi-env g2x1:$E --graphi-env g1x2:GRAPHI_EXECUTORS=1,GRAPHI_THREADS_PER_EXECUTOR=2 \
  --lockstep 4 --repeats 2 --warmup 5 --steps 3
echo chain_done >> /work/runs/s20/done
