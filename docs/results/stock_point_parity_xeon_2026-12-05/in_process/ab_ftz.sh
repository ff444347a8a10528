#!/bin/bash
# old (HEAD before FTZ, /work/wt_old) vs new (/work/main): LSTM small train, interleaved
source /work/venv312/bin/activate
export TF_CPP_MIN_LOG_LEVEL=3
for r in 1 2 3 4; do
  PYTHONPATH=/work/main python lstm_threads.py DEFAULT 2 1 400 > ftz_tf_i2a1_$r.json 2>/dev/null
  for tree in old new; do
    p=/work/main; [ $tree = old ] && p=/work/wt_old
    PYTHONPATH=$p GRAPHI_AUTOTUNE=0 GRAPHI_EXECUTORS=stock:2x1 python lstm_threads.py GRAPHI 0 0 400 > ftz_${tree}_gp21_$r.json 2>/dev/null
    PYTHONPATH=$p GRAPHI_AUTOTUNE=0 GRAPHI_EXECUTORS=2 GRAPHI_THREADS_PER_EXECUTOR=1 python lstm_threads.py GRAPHI 0 0 400 > ftz_${tree}_g2x1_$r.json 2>/dev/null
  done
done
echo done
