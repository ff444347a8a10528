#!/bin/bash
# Interleaved processes: stock DEFAULT, GRAPHI auto (empty cache), GRAPHI fixed stock (no autotuning),
# GRAPHI fixed stock after 300 steps on each of 2x1, 1x2, 1x1 (visited; ARMS names the arms),
# each serving the LSTM SavedModel single-stream (probe.py). Usage: [ARMS="default auto"] run.sh OUT ROUNDS,
# venv active, SavedModels from tools/export_serving_models.py --out /tmp/serving_models.
OUT=$1; ROUNDS=${2:-4}
mkdir -p $OUT
for r in $(seq 1 $ROUNDS); do
  for arm in ${ARMS:-default auto fixed}; do
    case $arm in
      default) env -u GRAPHI_EXECUTORS TF_CPP_MIN_LOG_LEVEL=3 timeout 300 python "$(dirname "$0")/probe.py" DEFAULT ;;
      auto) c=$(mktemp -d); TF_CPP_MIN_LOG_LEVEL=3 GRAPHI_CACHE_DIR=$c timeout 300 python "$(dirname "$0")/probe.py" GRAPHI ;;
      fixed) TF_CPP_MIN_LOG_LEVEL=3 GRAPHI_EXECUTORS=stock GRAPHI_AUTOTUNE=0 timeout 300 python "$(dirname "$0")/probe.py" GRAPHI ;;
      visited) VISIT_LAYOUTS=1 TF_CPP_MIN_LOG_LEVEL=3 GRAPHI_EXECUTORS=stock GRAPHI_AUTOTUNE=0 timeout 300 python "$(dirname "$0")/probe.py" GRAPHI ;;
    esac | tail -1 | sed "s/^/{\"round\": $r, \"arm\": \"$arm\", \"r\": /; s/\$/}/" >> $OUT/results.jsonl
  done
done
