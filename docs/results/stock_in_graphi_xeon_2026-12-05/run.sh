#!/bin/bash
# Plain "stock" through GRAPHI's executor against TensorFlow's own, GoogLeNet large training step.
source /work/venv312/bin/activate
cd /work/main
out=/work/scratch/s7/gstock_googlenet_large
rm -rf $out; mkdir -p $out
timeout 900 graphi-tf ab --model googlenet --size large --warmup 3 --steps 8 --repeats 4 \
  --arms stock_default,graphi_untuned \
  --graphi-env gstock:GRAPHI_EXECUTORS=stock \
  --graphi-env gstock_arena16:GRAPHI_EXECUTORS=stock,MALLOC_ARENA_MAX=16 \
  --trace-steps 0 --out-dir $out > $out/log 2>&1
echo rc=$? >> $out/log
