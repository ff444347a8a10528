#!/bin/bash
# Serving in lockstep: both SavedModels at 1, 4 and 8 clients (graphi-tf ab --clients --lockstep).
# Usage: [LOCKSTEP=6] [REPEATS=2] serving_lockstep.sh OUT_DIR   (from the repository root, venv active, nothing else running)
set -u
OUT=$1
mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"; git rev-parse HEAD > "$OUT/commit.txt"
[ -d /tmp/serving_models/lstm ] || python3 tools/export_serving_models.py --out /tmp/serving_models > "$OUT/export.log" 2>&1
: > "$OUT/summary.txt"
ARMS=stock_default,stock_i1_a1,stock_i1_a2,stock_i2_a1,graphi_auto
run() {
  name=$1; shift
  t0=$(date +%s)
  timeout 1500 graphi-tf ab "$@" --arms $ARMS --clients 1,4,8 --duration 1 --lockstep "${LOCKSTEP:-6}" --repeats "${REPEATS:-2}" \
    --warmup 50 --steps 20 --out-dir "$OUT/$name" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S) args: $*" >> "$OUT/summary.txt"
}
run lstm --saved-model /tmp/serving_models/lstm --input frames=1,50,32
run mobilenet_v2 --saved-model /tmp/serving_models/mobilenet_v2 --batch 1
echo done >> "$OUT/summary.txt"
