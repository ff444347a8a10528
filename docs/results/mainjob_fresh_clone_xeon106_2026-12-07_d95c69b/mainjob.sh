#!/bin/bash
# Fresh clone + new venv + the README's first command; timings to /work/scratch/mainjob.txt
set -u
rm -rf /work/mj && git clone -q /work/main /work/mj && cd /work/mj
PY=$(ls -d ~/.pyenv/versions/3.12*/bin/python3 | head -1)
$PY -m venv /work/mj/.venv && . /work/mj/.venv/bin/activate
t0=$(date +%s)
python3 -m pip install -q -r requirements.txt && python3 -m pip install -q --no-build-isolation . > /work/scratch/mj_install.log 2>&1
rc1=$?; t1=$(date +%s)
cd /tmp && rm -rf /tmp/mjrun && mkdir /tmp/mjrun && cd /tmp/mjrun
graphi-tf ab --model googlenet --size small > /work/scratch/mj_job.log 2>&1
rc2=$?; t2=$(date +%s)
echo "install rc=$rc1 s=$((t1-t0)) job rc=$rc2 s=$((t2-t1)) head=$(git -C /work/mj rev-parse --short HEAD)" > /work/scratch/mainjob.txt
