#!/bin/bash
# perf_probe.sh ARM TAG (run as: for a in "auto a1" "gstock g1" "auto a2" "gstock g2"; do ./perf_probe.sh $a; done): perf samples (cpu-clock, 499 Hz, no call graph) of 12 s of
# pathnet large steps after the autotuner settled (auto) or after 30 stock steps (gstock).
cd "$(dirname "$0")"
arm=$1 tag=$2
out=perf/perf_$tag.jsonl; rm -f $out
python auto_probe.py --arm $arm --model pathnet --size large --windows 4 --steps 5 --out $out 2>/dev/null &
pid=$!
while [ ! -s $out ]; do sleep 0.5; kill -0 $pid 2>/dev/null || exit 1; done
sleep 2
perf record -F 499 -p $pid -o perf/perf_$tag.data -- sleep 12 2>/dev/null >/dev/null
wait $pid
# Share per library, oneDNN's generated kernels ([JIT] per thread) summed into one line.
perf report -i perf/perf_$tag.data --sort dso --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" |
  awk '{a=$1; $1=""; d=$0; if (d ~ /JIT/) d="[JIT] (oneDNN kernels generated at run time)"; s[d]+=a}
       END {for (k in s) printf "%6.2f%% %s\n", s[k], k}' | sort -rn > perf/perf_${tag}_dso.txt
