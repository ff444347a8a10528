#!/usr/bin/env python3
"""Executor overhead per node: GRAPHI in each layout against stock TensorFlow at its pool settings.

    python3 tools/overhead_bench.py --out-dir overhead --rounds 5

Three graphs of small ops, run by a TF1 session with grappler and the classic graph
optimizer off (nothing is folded or fused away):

* ``chain``: 2,000 dependent scalar adds, the per-node cost of running one op after another;
* ``chains``: 250 independent chains of 8 scalar adds, the cost of handing ready ops out;
* ``lstm``: an LSTM cell (batch 16, 128 units) unrolled over 50 steps, real mid-size ops.

Arms: stock TensorFlow's executor at every (inter_op, intra_op) in the powers of two up to
the cores, and at its default pools; GRAPHI, autotuning off, in each setting its autotuner
explores (``autotune_candidates``): the team layouts (``GRAPHI_EXECUTORS`` /
``GRAPHI_THREADS_PER_EXECUTOR``), the stock points (``GRAPHI_EXECUTORS=stock:IxA``, arms
``graphi_stock_iI_aA``: TensorFlow's executor inside GRAPHI on pools GRAPHI sizes) and
"stock" (TensorFlow's executor on the process's own pools). Every arm runs in its own process (TensorFlow fixes its pools per process),
the arms interleaved over ``--rounds`` rounds with the order rotated each round; a process
warms up, then times ``--steps`` steps and reports their median. The figure is ns per node:
the median over rounds of (median step time / nodes run), with the IQR over rounds.
Writes overhead.json and overhead.md into ``--out-dir``, and the table on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

GRAPHS = ("chain", "chains", "lstm")
DEFAULT_ROUNDS = 5
DEFAULT_STEPS = 200
DEFAULT_WARMUP = 50


# --------------------------------------------------------------------------- worker


def build(graph_name: str) -> Any:
    """(graph, fetch, nodes): the graph, what a step fetches, and the nodes a step runs."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        if graph_name == "chain":
            one = tf1.Variable(1.0).read_value()  # read once: the step is the adds
            y = one
            for _ in range(2000):
                y = y + one
            fetch = y.op
        elif graph_name == "chains":
            one = tf1.Variable(1.0).read_value()
            ends = []
            for _ in range(250):
                y = one
                for _ in range(8):
                    y = y + one
                ends.append(y)
            fetch = tf.group(*ends)
        elif graph_name == "lstm":
            rng = np.random.default_rng(0)
            batch, units, steps = 16, 128, 50
            w = tf1.Variable(rng.standard_normal((2 * units, 4 * units), dtype=np.float32) * 0.05)
            b = tf1.Variable(np.zeros(4 * units, np.float32))
            x = tf1.Variable(rng.standard_normal((steps, batch, units), dtype=np.float32))
            h = tf.zeros((batch, units))
            c = tf.zeros((batch, units))
            for t in range(steps):
                z = tf.matmul(tf.concat([x[t], h], axis=1), w) + b
                i, f, g, o = tf.split(z, 4, axis=1)
                c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
                h = tf.sigmoid(o) * tf.tanh(c)
            fetch = tf.reduce_sum(h).op
        else:
            raise ValueError(f"graph {graph_name!r} is invalid; allowed: {', '.join(GRAPHS)}")
        init = tf1.global_variables_initializer()
    return graph, fetch, init


def worker(graph_name: str, executor: str, inter: int, intra: int, warmup: int, steps: int) -> Dict[str, Any]:
    import tensorflow as tf

    from graphi_tf import stepstats

    tf1 = tf.compat.v1
    if executor == "GRAPHI":
        import graphi_tf  # noqa: F401  (registers the executor)
    graph, fetch, init = build(graph_name)
    config = tf1.ConfigProto(inter_op_parallelism_threads=inter, intra_op_parallelism_threads=intra)
    if executor == "GRAPHI":
        config.experimental.executor_type = "GRAPHI"
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    config.graph_options.optimizer_options.do_common_subexpression_elimination = False
    run_metadata = tf1.RunMetadata()
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
        sess.run(fetch, options=options, run_metadata=run_metadata)  # counts the nodes a step runs
        nodes = sum(len(d.node_stats) for d in run_metadata.step_stats.dev_stats)
        times_ms = stepstats.time_steps(lambda: sess.run(fetch), steps, untimed=warmup)
    result = {"ok": True, "nodes": nodes, "median_step_ns": stepstats.median(times_ms) * 1e6}
    if executor == "GRAPHI":
        import graphi_tf

        info = graphi_tf.info()
        main = max(info["graphs"], key=lambda g: g["node_count"])
        result["setting"] = {k: main.get(k) for k in ("executors", "threads_per_executor", "source")}
        result["stock_steps"] = main.get("steps_on_stock_executor")
    return result


# --------------------------------------------------------------------------- orchestrator


def arms(python: str) -> List[Dict[str, Any]]:
    """Stock at its pool points and defaults; GRAPHI in each setting its autotuner explores:
    team layouts, stock points and 'stock' (TensorFlow's executor on its own pools)."""
    probe = subprocess.run([python, "-c", "import json; from graphi_tf import _loader; "
                                          "print(json.dumps(_loader.native().autotune_candidates()))"],
                           capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
    if probe.returncode != 0:
        raise RuntimeError(f"could not list GRAPHI's autotuning candidates: {probe.stderr[-1000:]}")
    candidates = json.loads(probe.stdout.strip().splitlines()[-1])
    from graphi_tf.lab.ab import sweep_values  # the stock sweep of graphi-tf ab: powers of two up to the cores

    cores = len(os.sched_getaffinity(0))
    out = [{"name": "stock_default", "executor": "DEFAULT", "inter": 0, "intra": 0, "env": {}}]
    for i in sweep_values(cores):
        for a in sweep_values(cores):
            out.append({"name": f"stock_i{i}_a{a}", "executor": "DEFAULT", "inter": i, "intra": a, "env": {}})
    for label in candidates:
        if label == "stock":
            name, env = "graphi_stock", {"GRAPHI_EXECUTORS": "stock"}
        elif label.startswith("stock:"):
            inter, intra = label[len("stock:"):].split("x")
            name, env = f"graphi_stock_i{inter}_a{intra}", {"GRAPHI_EXECUTORS": label}
        else:
            e, t = label.split("x")
            name, env = f"graphi_{e}x{t}", {"GRAPHI_EXECUTORS": e, "GRAPHI_THREADS_PER_EXECUTOR": t}
        out.append({"name": name, "executor": "GRAPHI", "inter": 0, "intra": 0,
                    "env": dict(env, GRAPHI_AUTOTUNE="0")})
    return out


def run_arm(python: str, graph: str, arm: Dict[str, Any], warmup: int, steps: int) -> Dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.update(arm["env"], TF_CPP_MIN_LOG_LEVEL="3", PYTHONSAFEPATH="1")
    cmd = [python, os.path.abspath(__file__), "--worker", "--graph", graph, "--executor", arm["executor"],
           "--inter", str(arm["inter"]), "--intra", str(arm["intra"]), "--warmup", str(warmup),
           "--steps", str(steps)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timed out"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "error": f"exit status {proc.returncode}: {proc.stderr.strip()[-800:]}"}


def quantile(values: Sequence[float], q: float) -> float:
    values = sorted(values)
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def summarize(records: Dict[str, Dict[str, List[Dict[str, Any]]]]) -> Dict[str, Any]:
    table: Dict[str, Any] = {}
    for graph, by_arm in records.items():
        rows = {}
        for name, runs in by_arm.items():
            per_node = [r["median_step_ns"] / r["nodes"] for r in runs if r.get("ok") and r.get("nodes")]
            if not per_node:
                rows[name] = {"ok": False, "error": next((r.get("error") for r in runs if not r.get("ok")), None)}
                continue
            rows[name] = {"ok": True, "ns_per_node": statistics.median(per_node), "p25": quantile(per_node, 0.25),
                          "p75": quantile(per_node, 0.75), "processes": len(per_node),
                          "nodes": next(r["nodes"] for r in runs if r.get("ok"))}
        ok = {n: r for n, r in rows.items() if r["ok"]}
        stock = {n: r for n, r in ok.items() if n.startswith("stock_")}
        graphi = {n: r for n, r in ok.items() if n.startswith("graphi_")}
        best_stock = min(stock, key=lambda n: stock[n]["ns_per_node"]) if stock else None
        best_graphi = min(graphi, key=lambda n: graphi[n]["ns_per_node"]) if graphi else None
        table[graph] = {"arms": rows, "best_stock": best_stock, "best_graphi": best_graphi}
    return table


def render(table: Dict[str, Any], machine: str, rounds: int) -> str:
    lines = [f"# overhead_bench: {machine}", "",
             f"ns per node: median over {rounds} interleaved processes of (median step time / nodes run) "
             "[IQR over the processes]; grappler and the graph optimizer off.", ""]
    for graph, entry in table.items():
        lines += [f"## {graph}", "", "| arm | nodes | ns/node | IQR |", "|---|---:|---:|---|"]
        for name, row in sorted(entry["arms"].items(), key=lambda kv: kv[1].get("ns_per_node", 1e18)):
            if not row["ok"]:
                lines.append(f"| {name} | - | failed | {row.get('error')} |")
                continue
            mark = " (best stock)" if name == entry["best_stock"] else (
                " (best GRAPHI)" if name == entry["best_graphi"] else "")
            lines.append(f"| {name}{mark} | {row['nodes']} | {row['ns_per_node']:.0f} | "
                         f"{row['p25']:.0f}–{row['p75']:.0f} |")
        if entry["best_stock"] and entry["best_graphi"]:
            s = entry["arms"][entry["best_stock"]]["ns_per_node"]
            g = entry["arms"][entry["best_graphi"]]["ns_per_node"]
            lines += ["", f"Best GRAPHI / best stock: {g / s:.3f} ({entry['best_graphi']} against "
                          f"{entry['best_stock']})."]
        lines.append("")
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {len(os.sched_getaffinity(0))} cpus"
    except OSError:
        pass
    return f"unknown CPU, {len(os.sched_getaffinity(0))} cpus"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default="overhead_results")
    parser.add_argument("--graphs", default=",".join(GRAPHS), help=f"comma-separated subset of {', '.join(GRAPHS)}")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    parser.add_argument("--arms", default=None, help="comma-separated arm names (default: all)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--graph", help=argparse.SUPPRESS)
    parser.add_argument("--executor", help=argparse.SUPPRESS)
    parser.add_argument("--inter", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--intra", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        try:
            out = worker(args.graph, args.executor, args.inter, args.intra, args.warmup, args.steps)
        except Exception as e:  # reported to the orchestrator, which records it
            out = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out), flush=True)
        return 0
    graphs = [g.strip() for g in args.graphs.split(",") if g.strip()]
    bad = [g for g in graphs if g not in GRAPHS]
    if bad or not graphs:
        parser.error(f"--graphs {args.graphs!r}: allowed: a comma-separated subset of {', '.join(GRAPHS)}")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0:
        parser.error("--rounds and --steps: allowed: >= 1; --warmup: >= 0")
    arm_list = arms(args.python)
    if args.arms:
        wanted = [a.strip() for a in args.arms.split(",") if a.strip()]
        unknown = [a for a in wanted if a not in {x["name"] for x in arm_list}]
        if unknown:
            parser.error(f"--arms: unknown {unknown}; allowed: {', '.join(x['name'] for x in arm_list)}")
        arm_list = [x for x in arm_list if x["name"] in wanted]
    os.makedirs(args.out_dir, exist_ok=True)
    records: Dict[str, Dict[str, List[Dict[str, Any]]]] = {g: {a["name"]: [] for a in arm_list} for g in graphs}
    machine = cpu_model()
    doc = {"tool": "tools/overhead_bench.py", "machine": machine, "created_unix": time.time(),
           "settings": {"rounds": args.rounds, "steps": args.steps, "warmup": args.warmup}, "records": records}
    for r in range(args.rounds):
        for graph in graphs:
            order = arm_list[r % len(arm_list):] + arm_list[:r % len(arm_list)]
            for arm in order:
                rec = run_arm(args.python, graph, arm, args.warmup, args.steps)
                rec["round"] = r
                records[graph][arm["name"]].append(rec)
                status = (f"{rec['median_step_ns'] / rec['nodes']:.0f} ns/node" if rec.get("ok")
                          else f"FAILED {rec.get('error')}")
                print(f"[round {r + 1}/{args.rounds}] {graph} {arm['name']}: {status}", file=sys.stderr, flush=True)
            doc["table"] = summarize(records)
            with open(os.path.join(args.out_dir, "overhead.json"), "w") as f:
                json.dump(doc, f, indent=1)
    text = render(doc["table"], machine, args.rounds)
    with open(os.path.join(args.out_dir, "overhead.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
