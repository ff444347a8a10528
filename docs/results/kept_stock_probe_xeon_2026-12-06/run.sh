#!/bin/bash
# Two probes of the kept-stock gap on pathnet large, one process at a time, otherwise idle.
# aba_round1.jsonl: A-B-A, wall time only (an earlier aba.py without the CPU columns);
# aba_round2.jsonl and after_settle.jsonl: the scripts as they are here.
set -u
cd "$(dirname "$0")"
for r in 1 2; do
  timeout 600 python aba.py --model pathnet --size large --out aba_round2.jsonl > /dev/null
  timeout 600 python aba.py --model pathnet --size large --control --out aba_round2.jsonl > /dev/null
done
for r in 1 2 3; do
  timeout 600 python auto_probe.py --arm auto --model pathnet --size large --out after_settle.jsonl
  timeout 600 python auto_probe.py --arm gstock --model pathnet --size large --out after_settle.jsonl
done
