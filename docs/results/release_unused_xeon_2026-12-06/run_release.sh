#!/usr/bin/env bash
# pathnet large: GRAPHI auto at the checkout ("new"), GRAPHI auto from OLD_PKG (a copy of the
# graphi_tf package with its library built at b619a0d: "old", keeps every setting's threads),
# and fixed stock through GRAPHI ("gstock"); one process each per round, the order rotating.
# Run from anywhere with the venv active: OUT=run.jsonl OLD_PKG=/path/to/old_pkg run_release.sh
# (this session ran it from a copy of the probe in /work/scratch/probe, OLD_PKG=/work/old_pkg).
set -u
PROBE="$(cd "$(dirname "$0")/../kept_stock_probe_xeon_2026-12-06" && pwd)/auto_probe.py"
OUT=${OUT:-release_ab.jsonl}
OLD_PKG=${OLD_PKG:?a copy of the graphi_tf package built at b619a0d}
arms=(new old gstock)
for r in 1 2 3 4; do
  for k in 0 1 2; do
    arm=${arms[$(( (k + r) % 3 ))]}
    case $arm in
      new) ARM_LABEL=new timeout 600 python "$PROBE" --arm auto --windows 2 --steps 5 --out "$OUT" ;;
      old) ARM_LABEL=old PYTHONPATH="$OLD_PKG" timeout 600 python "$PROBE" --arm auto --windows 2 --steps 5 --out "$OUT" ;;
      gstock) ARM_LABEL=gstock timeout 600 python "$PROBE" --arm gstock --pre 20 --windows 2 --steps 5 --out "$OUT" ;;
    esac > /dev/null 2>> run_release.err
    echo "round $r $arm rc=$?" >> run_release.log
  done
done
echo done >> run_release.log
