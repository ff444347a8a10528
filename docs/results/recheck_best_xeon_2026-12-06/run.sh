#!/bin/bash
# GRAPHI auto against stock's best point at HEAD, more rounds, on the cases the 12-05 table and the
# 12-06 serving table left below 0.98x (issue 25). One case at a time, each committed as it ends.
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)
set -u
OUT=$1
mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt"; git rev-parse HEAD > "$OUT/commit.txt"
[ -d /tmp/serving_models/mobilenet_v2 ] || python3 tools/export_serving_models.py --out /tmp/serving_models > "$OUT/export.log" 2>&1
run() {
  name=$1; shift
  t0=$(date +%s)
  timeout 1800 graphi-tf ab "$@" --out-dir "$OUT/$name" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S) args: $*" >> "$OUT/summary.txt"
  git add "$OUT" && git commit -q -m "results: recheck at HEAD, $name (2-vCPU Xeon)" -- "$OUT" || true
}
run mobilenet_v2_serving --saved-model /tmp/serving_models/mobilenet_v2 --batch 1 --clients 1,8 --duration 4 \
    --repeats 6 --arms stock_default,stock_i1_a1,stock_i2_a1,graphi_auto
run lstm_small --model lstm --size small --repeats 8 --arms stock_default,stock_i2_a1,graphi_auto
run pathnet_large --model pathnet --size large --warmup 5 --steps 5 --repeats 4 --arms stock_default,stock_i2_a1,graphi_auto
run googlenet_large --model googlenet --size large --warmup 5 --steps 5 --repeats 4 --arms stock_default,stock_i2_a1,graphi_auto
echo done >> "$OUT/summary.txt"
# Part 2 (run2.sh): the LSTM small step again, two arms, 16 rounds.
