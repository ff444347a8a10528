#!/bin/bash
# After chain.sh: the LSTM SavedModel single-stream, with i1_a1 and GRAPHI 1x1 / 1x2 fixed.
source /work/venv312/bin/activate
cd /work/main || exit 1
until grep -q chain_done /work/runs/s20/done 2>/dev/null; do sleep 10; done
t0=$(date +%s)
timeout 1200 graphi-tf ab --saved-model /tmp/serving_models/lstm --input frames=1,50,32 \
  --arms stock_default,stock_i1_a1,stock_i2_a1,graphi_auto \
  --graphi-env g1x1:GRAPHI_EXECUTORS=1,GRAPHI_THREADS_PER_EXECUTOR=1 \
  --graphi-env g1x2:GRAPHI_EXECUTORS=1,GRAPHI_THREADS_PER_EXECUTOR=2 \
  --lockstep 16 --repeats 4 --steps 20 --trace-steps 0 --out-dir /work/runs/s20/lstm_sm_single > /work/runs/s20/lstm_sm_single.log 2>&1
echo "lstm_sm_single rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> /work/runs/s20/done
echo chain2_done >> /work/runs/s20/done
