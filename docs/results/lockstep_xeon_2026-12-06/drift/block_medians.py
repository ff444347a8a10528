import sys, time, json
import graphi_tf
from graphi_tf.lab import cli_common
p = cli_common.argparse.ArgumentParser(); cli_common.add_case_arguments(p)
args = p.parse_args(["--saved-model", "/tmp/serving_models/lstm", "--input", "frames=1,50,32"])
step = cli_common.build_step(cli_common.Case.from_args(args), executor=sys.argv[1])
if sys.argv[1] == "GRAPHI": graphi_tf.configure(autotune=False)
times = []
for _ in range(9000):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
blocks = [sorted(times[i:i+500])[250]*1e3 for i in range(0, 9000, 500)]
print(" ".join(f"{b:.2f}" for b in blocks))
s = sorted(times[1500:])
print("pct", " ".join(f"{s[int(len(s)*q)]*1e3:.2f}" for q in (0.05,0.1,0.25,0.5,0.75,0.9,0.95)))
import collections
h = collections.Counter(round(x*1e3*10)/10 for x in times[1500:])
print(sorted((k,v) for k,v in h.items() if v > 60))
