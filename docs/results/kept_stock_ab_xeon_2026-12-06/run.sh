#!/bin/bash
# GRAPHI auto against stock default and plain stock through GRAPHI on the two cases where
# auto keeps stock (pathnet and googlenet large), 4 rounds of 8 timed steps each.
set -u
cd "$(dirname "$0")"
m=${1:-pathnet}
mkdir -p "$m"
timeout 2400 graphi-tf ab --model "$m" --size large --warmup 5 --steps 8 --repeats 4 \
  --arms stock_default,graphi_auto --graphi-env gstock:GRAPHI_EXECUTORS=stock \
  --out-dir "$m" > "$m/log" 2>&1
echo "rc $?" >> "$m/log"
