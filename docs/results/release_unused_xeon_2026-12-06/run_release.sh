#!/usr/bin/env bash
# pathnet large: GRAPHI auto at 20dbdd9 (lets go of unused threads) vs at b619a0d (keeps them)
# vs fixed stock through GRAPHI; one process each, interleaved, rotating order.
cd /work/scratch/probe
. /work/venv312/bin/activate
OUT=${OUT:-release_ab.jsonl}
arms=(new old gstock)
for r in 1 2 3 4; do
  for k in 0 1 2; do
    arm=${arms[$(( (k + r) % 3 ))]}
    case $arm in
      new) ARM_LABEL=new timeout 600 python auto_probe.py --arm auto --windows 2 --steps 5 --out $OUT ;;
      old) ARM_LABEL=old PYTHONPATH=/work/old_pkg timeout 600 python auto_probe.py --arm auto --windows 2 --steps 5 --out $OUT ;;
      gstock) ARM_LABEL=gstock timeout 600 python auto_probe.py --arm gstock --pre 20 --windows 2 --steps 5 --out $OUT ;;
    esac > /dev/null 2>> run_release.err
    echo "round $r $arm rc=$?" >> run_release.log
  done
done
echo done >> run_release.log
