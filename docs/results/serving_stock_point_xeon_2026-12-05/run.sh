#!/usr/bin/env bash
# Serving: TF's own inter=2 intra=1 against GRAPHI pinned to stock:2x1, old build (main) and new (dev), interleaved.
set -u
cd /work/dev
. /work/venv312/bin/activate
export TF_CPP_MIN_LOG_LEVEL=3
OUT=${1:-/work/scratch/serving_check}
mkdir -p $OUT
for model in mobilenet_v2 lstm; do
  if [ $model = lstm ]; then inp="--input frames=1,50,32 --duration 4"; else inp="--batch 1 --duration 3"; fi
  t0=$(date +%s)
  PYTHONPATH=/work/dev timeout 1200 python -m graphi_tf.lab.cli ab --saved-model /tmp/serving_models/$model $inp --clients 8 --repeats 5 \
    --arms stock_i2_a1 \
    --graphi-env old_stock21:PYTHONPATH=/work/main,GRAPHI_EXECUTORS=stock:2x1,GRAPHI_AUTOTUNE=0 \
    --graphi-env new_stock21:PYTHONPATH=/work/dev,GRAPHI_EXECUTORS=stock:2x1,GRAPHI_AUTOTUNE=0 \
    --out-dir $OUT/$model > $OUT/$model.log 2>&1
  echo "$model rc=$? $(( $(date +%s)-t0 ))s"
done
