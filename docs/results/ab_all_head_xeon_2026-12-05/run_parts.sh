#!/bin/bash
# One case per part, one after the other, each committed as it ends (tools/ab_all.py, all 9 arms).
cd "$(dirname "$0")/../../.." || exit 1
source /work/venv312/bin/activate
out=docs/results/ab_all_head_xeon_2026-12-05
git rev-parse HEAD > $out/commit.txt
lscpu > $out/lscpu.txt
for case in googlenet:small lstm:small pathnet:small lstm:medium pathnet:medium googlenet:medium \
            lstm:large pathnet:large googlenet:large phased_lstm:small phased_lstm:medium phased_lstm:large; do
  m=${case%%:*}; s=${case##*:}
  t0=$(date +%s)
  timeout 2700 python tools/ab_all.py --models $m --sizes $s --work-dir ab_results/ab_all > $out/${m}_${s}.log 2>&1
  rc=$?
  echo "${m}_${s} rc=$rc wall_s=$(( $(date +%s) - t0 )) end=$(date -u +%H:%M:%S)" >> $out/summary.txt
  git add $out docs/results/${m}_${s}_graph.json docs/results/results.md docs/results/results.png README.md
  git commit -q -m "Results at HEAD: ${m} ${s} (tools/ab_all.py, 2-vCPU Xeon)" || true
done
echo done >> $out/summary.txt
