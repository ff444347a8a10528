#!/bin/bash
source /work/venv312/bin/activate
cd /work/main || exit 1
E="GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1"
for spec in "small 12 3 10" "medium 6 2 3"; do
  set -- $spec
  t0=$(date +%s)
  timeout 900 graphi-tf ab --model googlenet --size $1 --arms stock_i2_a1 \
    --graphi-env g2x1:$E --graphi-env g2x1_noalways:$E,GRAPHI_SHARE_ALWAYS_NS=off \
    --lockstep $2 --repeats $3 --steps $4 --trace-steps 0 --out-dir /work/runs/gnet_share_$1 > /work/runs/gnet_share_$1.log 2>&1
  echo "googlenet_$1 rc=$? wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> /work/runs/gnet_share.done
done
