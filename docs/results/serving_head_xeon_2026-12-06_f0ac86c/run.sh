#!/bin/bash
# Serving table at HEAD: both SavedModels at 1, 4 and 8 clients, 3 rounds (README "Serving").
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)
set -u
OUT=$1
mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"; git rev-parse HEAD > "$OUT/commit.txt"
[ -d /tmp/serving_models/lstm ] || python3 tools/export_serving_models.py --out /tmp/serving_models > "$OUT/export.log" 2>&1
: > "$OUT/summary.txt"
run() {
  name=$1; shift
  t0=$(date +%s)
  timeout 1500 graphi-tf ab "$@" --out-dir "$OUT/$name" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - t0 )) args: $*" >> "$OUT/summary.txt"
}
run lstm --saved-model /tmp/serving_models/lstm --input frames=1,50,32 --clients 1,4,8 --duration 4 --repeats 3
run mobilenet_v2 --saved-model /tmp/serving_models/mobilenet_v2 --batch 1 --clients 1,4,8 --duration 3 --repeats 3
echo done >> "$OUT/summary.txt"
