import sys, time, statistics, json, os
executor, inter, intra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model = os.environ.get("MODEL", "lstm")
from graphi_tf.lab import models
step = models.build_step(model, size="small", mode="graph", executor=executor, inter_op=inter or None, intra_op=intra or None)
for _ in range(250): step()
ts = []
for _ in range(150):
    t0 = time.perf_counter(); step(); ts.append(time.perf_counter() - t0)
print(json.dumps({"median_ms": 1e3 * statistics.median(ts)}))
