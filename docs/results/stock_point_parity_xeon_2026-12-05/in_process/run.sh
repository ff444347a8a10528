#!/bin/bash
# interleaved: TF i2a1, GRAPHI stock:2x1 (autotune off), 4 rounds
for r in 1 2 3 4; do
  TF_CPP_MIN_LOG_LEVEL=3 python lstm_threads.py DEFAULT 2 1 400 > tf_i2a1_$r.json 2>/dev/null
  GRAPHI_AUTOTUNE=0 GRAPHI_EXECUTORS=stock:2x1 TF_CPP_MIN_LOG_LEVEL=3 python lstm_threads.py GRAPHI 0 0 400 > gp21_$r.json 2>/dev/null
done
