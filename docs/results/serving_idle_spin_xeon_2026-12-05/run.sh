#!/usr/bin/env bash
# Serving: TensorFlow inter=2 intra=1 against GRAPHI pinned to 2x1, idle spin 50 us (819546a) and 250 us (f4f5155), interleaved.
set -u
cd /work/wt_bench
. /work/venv312/bin/activate
export TF_CPP_MIN_LOG_LEVEL=3
OUT=${1:-/work/scratch/serving_spin}
mkdir -p $OUT
for model in lstm mobilenet_v2; do
  if [ $model = lstm ]; then inp="--input frames=1,50,32 --duration 4"; else inp="--batch 1 --duration 3"; fi
  t0=$(date +%s)
  PYTHONPATH=/work/wt_bench timeout 1200 python -m graphi_tf.lab.cli ab --saved-model /tmp/serving_models/$model $inp --clients 1,8 --repeats 3 \
    --arms stock_i2_a1 \
    --graphi-env spin50_2x1:PYTHONPATH=/work/wt_old,GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1,GRAPHI_AUTOTUNE=0 \
    --graphi-env spin250_2x1:PYTHONPATH=/work/wt_bench,GRAPHI_EXECUTORS=2,GRAPHI_THREADS_PER_EXECUTOR=1,GRAPHI_AUTOTUNE=0 \
    --out-dir $OUT/$model > $OUT/$model.log 2>&1
  echo "$model rc=$? $(( $(date +%s)-t0 ))s"
done
