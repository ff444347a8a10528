"""One serving process, single stream, on the LSTM SavedModel: times steps after the autotuner
settled (GRAPHI) or after warm-up (DEFAULT), then lists every thread's name and allowed cpus."""
import argparse, glob, json, os, sys, time
import graphi_tf
from graphi_tf.lab import cli_common

executor = sys.argv[1]
p = argparse.ArgumentParser()
cli_common.add_case_arguments(p)
args = p.parse_args(["--saved-model", "/tmp/serving_models/lstm", "--input", "frames=1,50,32"])
case = cli_common.Case.from_args(args)
step = cli_common.build_step(case, executor=executor)
t_start = time.monotonic()
state = None
if os.environ.get("VISIT_LAYOUTS"):
    # As an exploration does, without the autotuner: run on team layouts, then back on the
    # environment's setting (GRAPHI_EXECUTORS=stock).
    for layout in ((2, 1), (1, 2), (1, 1)):
        graphi_tf.configure(*layout)
        for _ in range(300):
            step()
    graphi_tf.configure()
for i in range(6000):
    step()
    if executor == "GRAPHI" and i % 50 == 0:
        graphs = graphi_tf.info()["graphs"]
        if graphs:
            main = max(graphs, key=lambda g: g["node_count"])
            state = (main.get("autotune") or {}).get("state")
            if state not in (None, "waiting", "exploring") and i >= 1500:
                break
    elif executor != "GRAPHI" and i >= 1500:
        break
import resource
before = resource.getrusage(resource.RUSAGE_SELF)
times = []
for _ in range(3000):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
after = resource.getrusage(resource.RUSAGE_SELF)
# Per timed step: minor page faults and context switches of the whole process.
per_step = {k: (getattr(after, k) - getattr(before, k)) / len(times) for k in ("ru_minflt", "ru_majflt", "ru_nvcsw", "ru_nivcsw")}
times.sort()
threads = {}
for task in glob.glob(f"/proc/{os.getpid()}/task/*"):
    try:
        name = open(f"{task}/comm").read().strip()
        cpus = next(l.split(":", 1)[1].strip() for l in open(f"{task}/status") if l.startswith("Cpus_allowed_list"))
        st = open(f"{task}/stat").read().rsplit(")", 1)[1].split()
        threads.setdefault(f"{name} [{cpus}]", []).append(int(st[11]) + int(st[12]))
    except (OSError, StopIteration):
        pass
setting = graphi_tf.info().get("setting") if executor == "GRAPHI" else None
print(json.dumps({"executor": executor, "env": os.environ.get("GRAPHI_EXECUTORS"),
                  "visited": bool(os.environ.get("VISIT_LAYOUTS")), "per_step": per_step, "state": state,
                  "setting": setting, "median_ms": times[len(times)//2] * 1e3,
                  "p10_ms": times[len(times)//10] * 1e3,
                  "mean_ms": sum(times) / len(times) * 1e3, "p90_ms": times[len(times)*9//10] * 1e3,
                  "autotune": (max(graphi_tf.info()["graphs"], key=lambda g: g["node_count"]).get("autotune") or {}).get("reason") if executor == "GRAPHI" else None,
                  # The visits' own step times: per round, per candidate (the order in "order").
                  "visits": {k: (max(graphi_tf.info()["graphs"], key=lambda g: g["node_count"]).get("autotune") or {}).get(k)
                             for k in ("order", "round_medians_ms", "reference_step_ms")} if executor == "GRAPHI" else None, "threads": threads}))
