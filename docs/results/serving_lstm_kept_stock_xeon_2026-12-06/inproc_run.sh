#!/bin/bash
# Interleaved processes of inproc.py: "explore" (empty cache) and "control", ROUNDS rounds.
# Usage: inproc_run.sh OUT.jsonl ROUNDS (venv active, /tmp/serving_models from
# tools/export_serving_models.py, nothing else running).
OUT=$1; ROUNDS=${2:-8}
for r in $(seq 1 $ROUNDS); do
  for arm in explore control; do
    c=$(mktemp -d)
    TF_CPP_MIN_LOG_LEVEL=3 GRAPHI_CACHE_DIR=$c timeout 300 python "$(dirname "$0")/inproc.py" $arm 2>/dev/null \
      | tail -1 | sed "s/^/{\"round\": $r, \"r\": /; s/\$/}/" >> $OUT
    rm -rf $c
  done
done
