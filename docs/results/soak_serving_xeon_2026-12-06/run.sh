#!/bin/bash
# Load-changing serving soak, both SavedModels (tools/export_serving_models.py --out /tmp/serving_models).
# Usage: run.sh OUTDIR
set -u
OUT=${1:-.}
for m in lstm mobilenet_v2; do
  /usr/bin/time -v timeout 900 python3 tools/soak_serving.py /tmp/serving_models/$m \
      --schedule 1,8,2,4,16,1,8,4 --phase-s 6 --cycles 3 --timeline --out "$OUT/$m.jsonl" \
      > "$OUT/$m.log" 2>&1
  echo "$m rc=$?" >> "$OUT/rc.txt"
done
