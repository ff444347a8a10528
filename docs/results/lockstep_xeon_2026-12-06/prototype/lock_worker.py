import json, os, sys, time
import graphi_tf
from graphi_tf.lab import cli_common
executor, inter, intra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = cli_common.argparse.ArgumentParser(); cli_common.add_case_arguments(p)
args = p.parse_args(["--saved-model", "/tmp/serving_models/lstm", "--input", "frames=1,50,32"])
step = cli_common.build_step(cli_common.Case.from_args(args), executor=executor,
                             inter_op=inter or None, intra_op=intra or None)
for i in range(8000):
    step()
    if i >= 1500 and (executor != "GRAPHI" or i % 50 == 0 and (max(graphi_tf.info()["graphs"], key=lambda g: g["node_count"]).get("autotune") or {}).get("state") not in (None, "waiting", "exploring")):
        break
setting = graphi_tf.info().get("setting") if executor == "GRAPHI" else None
print(json.dumps({"ready": True, "setting": setting}), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "quit": break
    n, discard = int(cmd[1]), int(cmd[2])
    for _ in range(discard): step()
    ts = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter(); step(); ts.append(time.perf_counter() - t)
    total = time.perf_counter() - t0
    ts.sort()
    print(json.dumps({"mean_ms": total / n * 1e3, "median_ms": ts[n // 2] * 1e3}), flush=True)
