#!/usr/bin/env python3
"""GRAPHI against stock TensorFlow on any N-core machine, within a time budget, in one folder.

    python3 tools/manycore_bench.py --out-dir manycore --budget-s 300

writes ``bench.json``, ``bench.md`` and ``bench.png`` into ``--out-dir`` (and one
``ab_<model>/`` folder per A/B case, as ``graphi-tf ab`` writes them). The stages, each written
out as soon as it ends, so a run cut short keeps what it measured:

1. **The machine**: lscpu's model, cores, NUMA nodes, the topology and tiles GRAPHI detected,
   and whether pinning took effect: the ``Cpus_allowed_list`` of GRAPHI's team threads, read
   from ``/proc/<pid>/task/*/status`` after a step on N one-thread teams.
2. **The paper's microbenchmarks** (§3.2), in one process: the throughput of a GEMM and of
   an element-wise op on one GRAPHI team of 1, 2, 4 ... N pinned threads (where each
   saturates), and k concurrent small-op chains on k pinned disjoint teams (GRAPHI kx(N/k))
   against the same graph on TensorFlow's own executor and shared pools in the same process,
   alternated over rounds.
3. **A/B of training steps** (LSTM, GoogLeNet, PathNet; ``graphi_tf.lab.ab.run_ab``): stock
   default, the stock points inter x intra = N, GRAPHI auto, and GRAPHI tuned, whose tuning
   run times every layout GRAPHI's tuner considers in interleaved rounds in one process (the
   "layouts" table). Every arm runs in its own process, the arms interleaved over
   ``--rounds`` rounds; LB = max(CP, W / cores) from traced reference processes. Warm-up and
   timed steps are scaled from a quick first measurement of each model (one short stock
   process) so that the run fits the budget; a model that cannot fit even at the fewest steps
   is skipped and the report says so.

Speed figures are what this machine measured, nothing else; the smoke test in the test suite
checks the outputs, never the speeds.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

MODELS = ("lstm", "googlenet", "pathnet")
DEFAULT_BUDGET_S = 300.0
DEFAULT_ROUNDS = 2
MIN_WARMUP, MAX_WARMUP = 10, 40
MIN_STEPS, MAX_STEPS = 8, 30
TUNE_WARMUP, TUNE_STEPS = 3, 5
TRACE_STEPS = 2
DEFAULT_SETTLE_S = 10.0  # graphi_auto: at most this long exploring after the warm-up (it stops once decided)
PROBE_STEPS = 3
MICRO_SHARE = 0.12  # of the budget, at most, for the microbenchmarks


def log(text: str) -> None:
    print(f"[manycore {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the machine


def lscpu() -> Dict[str, str]:
    """``lscpu``'s fields (empty where it is missing)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    fields = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def numa_nodes() -> List[Dict[str, str]]:
    base = "/sys/devices/system/node"
    nodes = []
    if os.path.isdir(base):
        for name in sorted(os.listdir(base)):
            if re.fullmatch(r"node\d+", name):
                try:
                    with open(os.path.join(base, name, "cpulist")) as f:
                        nodes.append({"node": name, "cpus": f.read().strip()})
                except OSError:
                    nodes.append({"node": name, "cpus": "?"})
    return nodes


def machine_summary() -> Dict[str, Any]:
    fields = lscpu()
    model = fields.get("Model name")
    if not model:
        try:
            with open("/proc/cpuinfo") as f:
                model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
        except OSError:
            model = None
    return {
        "lscpu_model": model,
        "lscpu": fields,
        "cpus_online": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "numa_nodes": numa_nodes(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "hostname": platform.node(),
    }


# --------------------------------------------------------------------------- microbenchmarks (worker)


def powers_up_to(n: int) -> List[int]:
    """graphi-tf ab's stock sweep (powers of two up to ``n``), and ``n`` itself."""
    from graphi_tf.lab.ab import sweep_values

    values = sweep_values(n)
    return values if values[-1] == n else values + [n]


def team_threads_affinity() -> List[Dict[str, str]]:
    """Name and Cpus_allowed_list of every GRAPHI thread of this process (from /proc)."""
    rows = []
    base = "/proc/self/task"
    for tid in sorted(os.listdir(base), key=int):
        try:
            with open(f"{base}/{tid}/comm") as f:
                name = f.read().strip()
            if not name.startswith("graphi"):
                continue
            with open(f"{base}/{tid}/status") as f:
                allowed = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("Cpus_allowed_list")), "?")
        except (OSError, StopIteration):
            continue
        rows.append({"tid": tid, "name": name, "cpus_allowed_list": allowed})
    return rows


def _cpu_set(text: str) -> List[int]:
    cpus: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            cpus += list(range(int(a), int(b) + 1))
        elif part.isdigit():
            cpus.append(int(part))
    return cpus


def micro_worker(budget_s: float, rounds: int) -> Dict[str, Any]:
    """The machine part GRAPHI sees and the microbenchmarks, in this process."""
    import numpy as np
    import tensorflow as tf

    import graphi_tf
    from graphi_tf import stepstats

    deadline = time.monotonic() + budget_s
    info = graphi_tf.info()
    cores = int(info["usable_cores"])
    tf1 = tf.compat.v1
    out: Dict[str, Any] = {"graphi_info": {k: info.get(k) for k in (
        "version", "tf_version", "cpu_model", "usable_cores", "usable_cpus", "quota_cores", "tiles",
        "executors", "threads_per_executor", "policy", "setting_source", "topology_error")}}

    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(0)

        def variable(shape: Any, scale: float = 1.0) -> Any:
            # Variables, not constants: graph optimizers would fold constant inputs away.
            return tf1.Variable(rng.standard_normal(shape, dtype=np.float32) * np.float32(scale))

        n = 1024
        a, b = variable((n, n)), variable((n, n))
        gemm = tf.reduce_sum(tf.matmul(a, b))
        elems = 1 << 23
        x = variable((elems,))
        eltwise = tf.reduce_sum(tf.tanh(x) * x)  # tanh over 8 Mi floats, then a product and a sum
        chain_len, m = 6, 192
        branches = []
        for k in range(cores):
            h, w = variable((m, m), m ** -0.5), variable((m, m), m ** -0.5)
            for _ in range(chain_len):
                h = tf.tanh(tf.matmul(h, w))
            branches.append(tf.reduce_sum(h))
        init = tf1.global_variables_initializer()
    sessions = {}
    for executor in ("GRAPHI", "DEFAULT"):
        config = tf1.ConfigProto()
        if executor == "GRAPHI":
            config.experimental.executor_type = "GRAPHI"
        sessions[executor] = tf1.Session(graph=graph, config=config)
        sessions[executor].run(init)

    def timed(sess: Any, fetch: Any, reps: int) -> float:
        """Seconds: the median of ``reps`` runs after one."""
        return stepstats.median(stepstats.time_steps(lambda: sess.run(fetch), reps, untimed=1)) / 1e3

    # Pinning: N one-thread teams, one step, then each team thread's Cpus_allowed_list.
    try:
        graphi_tf.configure(cores, 1)
        sessions["GRAPHI"].run(branches)
        threads = [t for t in team_threads_affinity() if re.match(r"graphi-e\d+-", t["name"])]
        single = [t for t in threads if len(_cpu_set(t["cpus_allowed_list"])) == 1]
        out["pinning"] = {"layout": f"{cores}x1", "graphi_threads": len(threads),
                          "threads_pinned_to_one_cpu": len(single),
                          "distinct_cpus": len({t["cpus_allowed_list"] for t in single}),
                          "threads": threads[:64],
                          "checked": "/proc/self/task/*/status Cpus_allowed_list of the team threads (graphi-e*)"}
    except Exception as e:  # a layout this machine refuses is a finding, not a crash
        out["pinning"] = {"error": f"{type(e).__name__}: {e}"}

    scaling: Dict[str, List[Dict[str, Any]]] = {"gemm": [], "eltwise": []}
    flops = 2.0 * n ** 3
    for threads in powers_up_to(cores):
        if time.monotonic() > deadline and scaling["gemm"]:  # past the budget: at least one point
            break
        try:
            graphi_tf.configure(1, threads)
        except ValueError as e:
            scaling["gemm"].append({"threads": threads, "error": str(e)})
            continue
        t_gemm = timed(sessions["GRAPHI"], gemm, 5)
        t_elt = timed(sessions["GRAPHI"], eltwise, 5)
        scaling["gemm"].append({"threads": threads, "ms": t_gemm * 1e3, "gflops": flops / t_gemm / 1e9})
        scaling["eltwise"].append({"threads": threads, "ms": t_elt * 1e3, "melem_per_s": elems / t_elt / 1e6})
    out["scaling"] = scaling
    out["scaling_setup"] = (f"one GRAPHI team of T pinned threads (configure(1, T)); GEMM {n}x{n}x{n} float32 "
                            f"({flops / 1e9:.2f} GFLOP), element-wise tanh(x)*x over {elems} floats; "
                            "median of 5 runs after one")

    concurrent = []
    for k in powers_up_to(cores)[1:]:
        if (time.monotonic() > deadline and concurrent) or cores % k:
            continue
        fetch = branches[:k]
        try:
            graphi_tf.configure(k, cores // k)
        except ValueError as e:
            concurrent.append({"k": k, "error": str(e)})
            continue
        ratios, g_ms, s_ms = [], [], []
        for r in range(rounds * 2):
            order = ("DEFAULT", "GRAPHI") if r % 2 == 0 else ("GRAPHI", "DEFAULT")
            got = {e: timed(sessions[e], fetch, 5) for e in order}
            s_ms.append(got["DEFAULT"] * 1e3)
            g_ms.append(got["GRAPHI"] * 1e3)
            ratios.append(got["DEFAULT"] / got["GRAPHI"])
        concurrent.append({"k": k, "layout": f"{k}x{cores // k}", "graphi_ms": statistics.median(g_ms),
                           "stock_shared_pool_ms": statistics.median(s_ms),
                           "speedup_median": statistics.median(ratios),
                           "speedup_half_range": (max(ratios) - min(ratios)) / 2, "rounds": len(ratios)})
    out["concurrent"] = concurrent
    out["concurrent_setup"] = (f"k independent chains of {chain_len} x (MatMul {m}x{m} + Tanh); GRAPHI on k pinned "
                               "teams of N/k threads against TensorFlow's executor on its default shared pools "
                               "(inter=intra=N) in the same process; alternated, median of 5 runs each, "
                               "speedup = stock / GRAPHI")
    graphi_tf.configure()
    for sess in sessions.values():
        sess.close()
    return out


# --------------------------------------------------------------------------- the A/B plan


@dataclasses.dataclass
class ModelPlan:
    model: str
    size: str
    warmup: int
    steps: int
    settle_autotune: int
    predicted_s: float
    probe: Dict[str, Any]


def stock_points(cores: int) -> List[str]:
    """The stock arms inter x intra = cores (inter a power of two dividing cores, and cores)."""
    inters = [v for v in powers_up_to(cores) if cores % v == 0]
    return [f"stock_i{i}_a{cores // i}" for i in inters]


def probe_model(python: str, model: str, size: str) -> Dict[str, Any]:
    """One short stock-default process: its wall time and median step time."""
    from graphi_tf.lab import ab

    argv = ["--role", "arm", "--executor", "DEFAULT", "--model", model, "--size", size, "--mode", "graph",
            "--warmup", "1", "--steps", str(PROBE_STEPS)]
    rec = ab.run_process(python, argv, ab.worker_env(), timeout=600)
    if not rec["ok"]:
        return {"ok": False, "error": rec["error"], "stderr_tail": rec["stderr_tail"], "wall_s": rec.get("wall_s")}
    times = rec["result"]["step_times_ms"]
    step_ms = statistics.median(times)
    wall = rec["wall_s"]
    return {"ok": True, "wall_s": wall, "step_ms": step_ms,
            "overhead_s": max(0.5, wall - (1 + PROBE_STEPS) * step_ms / 1e3)}


def predict_s(probe: Dict[str, Any], arms: int, rounds: int, layouts: int, warmup: int, steps: int,
              settle_steps: int, tuned: bool = True, trace: bool = True) -> float:
    """Seconds for one model's run_ab: rounds x arms processes, the tuning run (``tuned``),
    2 references (``trace``)."""
    step_s, over = probe["step_ms"] / 1e3, probe["overhead_s"]
    arm_s = over + (warmup + steps) * step_s * 1.2
    tune_s = over + layouts * (TUNE_WARMUP + 6 * (1 + TUNE_STEPS)) * step_s * 1.2 if tuned else 0.0
    ref_s = 2 * (over + (min(warmup, 20) + steps + TRACE_STEPS * 3) * step_s) if trace else 0.0
    settle_s = rounds * settle_steps * step_s
    return rounds * arms * arm_s + tune_s + ref_s + settle_s


def plan_model(model: str, size: str, probe: Dict[str, Any], budget_s: float, arms: int, rounds: int,
               layouts: int, settle_s: float = DEFAULT_SETTLE_S, tuned: bool = True,
               trace: bool = True) -> Optional[ModelPlan]:
    """The most warm-up and timed steps (within bounds) whose predicted time fits ``budget_s``;
    None if even the fewest do not fit."""
    settle = max(50, min(20000, int(settle_s * 1e3 / probe["step_ms"])))
    warmup, steps = MAX_WARMUP, MAX_STEPS
    while True:
        t = predict_s(probe, arms, rounds, layouts, warmup, steps, settle, tuned, trace)
        if t <= budget_s:
            return ModelPlan(model, size, warmup, steps, settle, t, probe)
        if warmup > MIN_WARMUP or steps > MIN_STEPS:
            warmup, steps = max(MIN_WARMUP, warmup - 10), max(MIN_STEPS, steps - 8)
            continue
        if settle > 50:
            settle = max(50, settle // 2)
            continue
        return None


# --------------------------------------------------------------------------- the report


def summarize_ab(doc: Dict[str, Any], plan: ModelPlan) -> Dict[str, Any]:
    arms = doc["arms"]
    best = doc.get("stock_best") or {}
    auto = arms.get("graphi_auto", {})
    tune = (doc.get("tune") or {}).get("result") or {}
    layouts = [{"layout": f"{r['executors']}x{r['threads_per_executor']}", "median_ms": r.get("median_ms"),
                "ratio_to_default": r.get("ratio_median"), "spread": r.get("ratio_spread")}
               for r in tune.get("settings") or []]
    bound = doc.get("bound") or {}
    return {
        "model": plan.model, "size": plan.size, "warmup": plan.warmup, "steps": plan.steps,
        "settle_autotune": plan.settle_autotune, "predicted_s": round(plan.predicted_s, 1),
        "graph_nodes": doc.get("graph_nodes"),
        "arms": {name: {"median_ms": a.get("median_ms"), "p25_ms": a.get("p25_ms"), "p75_ms": a.get("p75_ms"),
                        "status": a.get("status"), "efficiency": a.get("efficiency"),
                        "speedup_vs_stock_default": a.get("speedup_vs_stock_default"),
                        "setting": a.get("setting")}
                 for name, a in arms.items()},
        "stock_best": best,
        "lead": doc.get("lead"),
        "graphi_auto_setting": auto.get("setting") or {},
        "graphi_auto_autotune": auto.get("autotune"),
        "graphi_tuned_best": tune.get("best"),
        "layouts": layouts,
        "lb_ms": bound.get("lower_bound_ms"), "bound": {k: bound.get(k) for k in (
            "status", "work_ms", "critical_path_ms", "cores", "note", "error")},
        "speedups": doc.get("speedups"),
    }


def _fmt(v: Optional[float], f: str = "{:.2f}") -> str:
    return "-" if v is None else f.format(v)


def _speedup(sp: Optional[Dict[str, Any]]) -> str:
    if not sp or sp.get("ratio") is None:
        return "-"
    return f"{sp['ratio']:.2f} ± {sp.get('spread') or 0:.2f}"


def auto_vs_best(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    for sp in case.get("speedups") or []:
        if sp.get("arm") == "graphi_auto" and sp.get("baseline") == (case.get("stock_best") or {}).get("arm"):
            return sp
    return None


def render_markdown(report: Dict[str, Any]) -> str:
    m = report["machine"]
    lines = [f"# manycore_bench: {m.get('lscpu_model') or 'unknown CPU'}, {report.get('cores')} usable cores",
             "",
             f"{time.strftime('%Y-%m-%d', time.gmtime(report['created_unix']))}; {m.get('cpus_online')} cpus online, "
             f"NUMA nodes: {len(m.get('numa_nodes') or []) or 'not reported'}; budget {report['budget_s']:.0f} s, "
             f"took {report.get('elapsed_s', 0):.0f} s.", ""]
    micro = report.get("micro") or {}
    gi = micro.get("graphi_info") or {}
    if gi:
        tiles = gi.get("tiles") or []
        lines += [f"GRAPHI {gi.get('version')} on TensorFlow {gi.get('tf_version')}: {len(tiles)} tiles of "
                  f"{sorted({len(t) for t in tiles})} cpus" + (f" (topology: {gi['topology_error']})"
                                                               if gi.get("topology_error") else "") + "."]
    pin = micro.get("pinning") or {}
    if pin.get("error"):
        lines.append(f"Pinning: not checked ({pin['error']}).")
    elif pin:
        lines.append(f"Pinning ({pin['layout']}): {pin['threads_pinned_to_one_cpu']} of {pin['graphi_threads']} "
                     f"team threads allowed on exactly one cpu, {pin['distinct_cpus']} distinct cpus "
                     f"({pin['checked']}).")
    if micro.get("error"):
        lines.append(f"Microbenchmarks failed: {micro['error']}")
    scaling = micro.get("scaling") or {}
    if scaling.get("gemm"):
        lines += ["", "## Op scaling on one pinned team", "", micro.get("scaling_setup", ""), "",
                  "| threads | GEMM ms | GFLOP/s | tanh ms | Melem/s |", "|---:|---:|---:|---:|---:|"]
        for g, e in zip(scaling["gemm"], scaling.get("eltwise") or []):
            lines.append(f"| {g['threads']} | {_fmt(g.get('ms'))} | {_fmt(g.get('gflops'), '{:.1f}')} | "
                         f"{_fmt(e.get('ms'))} | {_fmt(e.get('melem_per_s'), '{:.0f}')} |")
    if micro.get("concurrent"):
        lines += ["", "## k concurrent small-op chains: pinned disjoint teams vs one shared pool", "",
                  micro.get("concurrent_setup", ""), "",
                  "| k | GRAPHI layout | GRAPHI ms | stock shared pool ms | speedup (median ± half range) |",
                  "|---:|---|---:|---:|---:|"]
        for c in micro["concurrent"]:
            if c.get("error"):
                lines.append(f"| {c['k']} | - | - | - | {c['error']} |")
                continue
            lines.append(f"| {c['k']} | {c['layout']} | {c['graphi_ms']:.2f} | {c['stock_shared_pool_ms']:.2f} | "
                         f"{c['speedup_median']:.2f} ± {c['speedup_half_range']:.2f} ({c['rounds']} rounds) |")
    lines += ["", "## Training steps (each arm its own process, interleaved rounds)", "",
              "Speedups: median of per-round ratios ± half their range; times: median [p25–p75] ms; "
              "LB = max(CP, W / cores).", "",
              "| model | nodes | stock default | stock best | GRAPHI auto (setting) | LB ms | auto vs default | "
              "auto vs best | rounds |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in report.get("ab") or []:
        if case.get("skipped") or case.get("error"):
            lines.append(f"| {case['model']} | - | - | - | - | - | - | - | {case.get('skipped') or case.get('error')} |")
            continue
        arms = case["arms"]
        d, a = arms.get("stock_default", {}), arms.get("graphi_auto", {})
        best = case.get("stock_best") or {}
        best_arm = arms.get(best.get("arm"), {})
        setting = case.get("graphi_auto_setting") or {}
        chosen = (f"{setting.get('executors')}x{setting.get('threads_per_executor')}"
                  if setting.get("executors") else "stock")
        src = setting.get("source")
        lines.append(
            f"| {case['model']}_{case['size']} | {case.get('graph_nodes') or '-'} | "
            f"{_fmt(d.get('median_ms'))} [{_fmt(d.get('p25_ms'))}–{_fmt(d.get('p75_ms'))}] | "
            f"{_fmt(best_arm.get('median_ms'))} ({best.get('arm', '-')}) | "
            f"{_fmt(a.get('median_ms'))} [{_fmt(a.get('p25_ms'))}–{_fmt(a.get('p75_ms'))}] ({chosen}"
            f"{', ' + src if src else ''}) | {_fmt(case.get('lb_ms'))} | "
            f"{_speedup(a.get('speedup_vs_stock_default'))} | {_speedup(auto_vs_best(case))} | "
            f"{case.get('rounds')} |")
    for case in report.get("ab") or []:
        if not case.get("arms"):
            continue
        lines += ["", f"### {case['model']}_{case['size']}: every arm", "",
                  "| arm | median ms | p25–p75 | vs stock default | LB/time |", "|---|---:|---:|---:|---:|"]
        for name, a in case["arms"].items():
            lines.append(f"| {name} | {_fmt(a.get('median_ms'))} | {_fmt(a.get('p25_ms'))}–{_fmt(a.get('p75_ms'))} | "
                         f"{_speedup(a.get('speedup_vs_stock_default'))} | {_fmt(a.get('efficiency'))} |")
        if case.get("layouts"):
            lines += ["", "GRAPHI's layouts in its tuning run (one process, interleaved rounds; ratio to its "
                          "default layout, < 1 faster; bound: the median's upper confidence bound, the "
                          "decision rule's median + spread):", "", "| layout | median ms | ratio | bound |",
                      "|---|---:|---:|---:|"]
            for row in case["layouts"]:
                bound = (None if row['ratio_to_default'] is None or row['spread'] is None
                         else row['ratio_to_default'] + row['spread'])
                lines.append(f"| {row['layout']} | {_fmt(row['median_ms'])} | {_fmt(row['ratio_to_default'])} | "
                             f"{_fmt(bound)} |")
    return "\n".join(lines) + "\n"


def render_png(report: Dict[str, Any], path: str) -> Optional[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no bench.png: matplotlib is not installed")
        return None
    micro = report.get("micro") or {}
    cases = [c for c in report.get("ab") or [] if c.get("arms")]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    scaling = micro.get("scaling") or {}
    ax = axes[0]
    for key, field, label in (("gemm", "gflops", "GEMM GFLOP/s"), ("eltwise", "melem_per_s", "tanh Melem/s")):
        rows = [r for r in scaling.get(key) or [] if r.get(field)]
        if rows:
            base = rows[0][field]
            ax.plot([r["threads"] for r in rows], [r[field] / base for r in rows], marker="o",
                    label=f"{label} (x of 1 thread)")
    if scaling.get("gemm"):
        top = max(r["threads"] for r in scaling["gemm"])
        ax.plot([1, top], [1, top], ls=":", color="gray", label="linear")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("threads in the team")
    ax.set_title("op scaling on one pinned team")
    ax.legend(fontsize=8)
    ax = axes[1]
    conc = [c for c in micro.get("concurrent") or [] if not c.get("error")]
    if conc:
        ax.bar([str(c["k"]) for c in conc], [c["speedup_median"] for c in conc],
               yerr=[c["speedup_half_range"] for c in conc], color="tab:orange")
        ax.axhline(1.0, color="gray", ls=":")
    ax.set_xlabel("k concurrent chains")
    ax.set_title("pinned teams vs shared pool (x)")
    ax = axes[2]
    width = 0.8 / 3
    names = [f"{c['model']}" for c in cases]
    for j, (key, label, color) in enumerate((("stock_default", "stock default", "tab:blue"),
                                             ("best", "stock best", "tab:cyan"),
                                             ("graphi_auto", "GRAPHI auto", "tab:orange"))):
        vals = []
        for c in cases:
            arm = (c.get("stock_best") or {}).get("arm") if key == "best" else key
            base = c["arms"].get("stock_default", {}).get("median_ms")
            v = c["arms"].get(arm, {}).get("median_ms")
            vals.append(base / v if base and v else 0)
        ax.bar([i + (j - 1) * width for i in range(len(cases))], vals, width, label=label, color=color)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(names)
    ax.axhline(1.0, color="gray", ls=":")
    ax.set_title("training step speed (x of stock default)")
    ax.legend(fontsize=8)
    m = report["machine"]
    fig.suptitle(f"manycore_bench: {m.get('lscpu_model')}, {report.get('cores')} cores")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write(report: Dict[str, Any], out_dir: str, png: bool = False) -> None:
    report["elapsed_s"] = time.monotonic() - report["_started"]
    doc = {k: v for k, v in report.items() if not k.startswith("_")}
    with open(os.path.join(out_dir, "bench.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    with open(os.path.join(out_dir, "bench.md"), "w") as f:
        f.write(render_markdown(doc))
    if png:
        render_png(doc, os.path.join(out_dir, "bench.png"))


# --------------------------------------------------------------------------- main


def run_micro(python: str, budget_s: float, rounds: int) -> Dict[str, Any]:
    cmd = [python, os.path.abspath(__file__), "--micro-worker", "--budget-s", str(budget_s),
           "--rounds", str(rounds)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONSAFEPATH="1")
    env = {k: v for k, v in env.items() if not k.startswith("GRAPHI_")}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget_s * 3 + 60, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "the microbenchmark process timed out"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"exit status {proc.returncode}: " + "\n".join(proc.stderr.strip().splitlines()[-15:])}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default="manycore_results")
    parser.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S,
                        help=f"seconds the whole run may take (default {DEFAULT_BUDGET_S:.0f})")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, in priority order (default {','.join(MODELS)})")
    parser.add_argument("--size", default="small", help="model size (default small)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="A/B rounds (default 2)")
    parser.add_argument("--no-micro", action="store_true", help="skip the microbenchmarks")
    parser.add_argument("--arms", default=None,
                        help="comma-separated A/B arms (graphi-tf ab names; default stock_default, the stock "
                             "points inter x intra = N, graphi_auto, graphi_tuned)")
    parser.add_argument("--trace-steps", type=int, default=TRACE_STEPS,
                        help=f"FULL_TRACE steps of the LB reference processes; 0 skips LB (default {TRACE_STEPS})")
    parser.add_argument("--settle-s", type=float, default=DEFAULT_SETTLE_S,
                        help="graphi_auto: at most this many seconds of untimed steps while its autotuner "
                             f"explores (it stops once decided; default {DEFAULT_SETTLE_S:g})")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the measuring processes")
    parser.add_argument("--micro-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.micro_worker:
        try:
            result = micro_worker(args.budget_s, args.rounds)
        except Exception as e:  # reported, not raised: the orchestrator records it
            result = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(result, default=str), flush=True)
        return 0
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        parser.error(f"--models {args.models!r}: allowed: a comma-separated subset of {', '.join(MODELS)}")
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: allowed: a whole number >= 1")
    if args.budget_s <= 0:
        parser.error(f"--budget-s {args.budget_s}: allowed: seconds > 0")
    os.makedirs(args.out_dir, exist_ok=True)
    started = time.monotonic()
    deadline = started + args.budget_s
    report: Dict[str, Any] = {"tool": "tools/manycore_bench.py", "created_unix": time.time(),
                              "budget_s": args.budget_s, "argv": sys.argv, "_started": started,
                              "machine": machine_summary(), "ab": []}
    write(report, args.out_dir)
    log(f"machine: {report['machine']['lscpu_model']}, {report['machine']['affinity_cpus']} cpus")
    if not args.no_micro:
        report["micro"] = run_micro(args.python, args.budget_s * MICRO_SHARE * 0.6, args.rounds)
        log("microbenchmarks: " + ("FAILED " + report["micro"]["error"] if report["micro"].get("error") else "done"))
    from graphi_tf.lab import ab

    cores = int((report.get("micro") or {}).get("graphi_info", {}).get("usable_cores") or ab.usable_cores())
    report["cores"] = cores
    write(report, args.out_dir)
    arms = ([a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else
            ["stock_default", *stock_points(cores), "graphi_auto", "graphi_tuned"])
    tuned, trace = "graphi_tuned" in arms, args.trace_steps > 0
    report["arms"] = arms
    layouts = cores.bit_length() + 1  # about the number of tuning candidates (powers of two, 1x1)
    probes = {}
    for model in models:
        if time.monotonic() > deadline - 20:
            break
        probes[model] = probe_model(args.python, model, args.size)
        p = probes[model]
        log(f"probe {model}: " + (f"{p['step_ms']:.1f} ms a step, {p['overhead_s']:.1f} s a process"
                                  if p["ok"] else f"FAILED {p['error']}"))
    # Models in priority order while their fewest-steps runs fit; the time left is then
    # shared in proportion to those minimal runs, re-planned before each model.
    minimal = {m: predict_s(p, len(arms), args.rounds, layouts, MIN_WARMUP, MIN_STEPS, 50, tuned, trace)
               for m, p in probes.items() if p["ok"]}
    kept: List[str] = []
    for model in models:
        if model in minimal and sum(minimal[k] for k in kept) + minimal[model] <= deadline - time.monotonic():
            kept.append(model)
    for model in models:
        probe = probes.get(model)
        if probe is None or not probe["ok"]:
            report["ab"].append({"model": model, "size": args.size,
                                 "error": "probe failed" if probe else "no time left to probe"})
            continue
        left = deadline - time.monotonic()
        pending = [k for k in kept if k not in {c["model"] for c in report["ab"]}]
        share = left * minimal[model] / max(1e-9, sum(minimal[k] for k in pending)) if model in kept else 0.0
        plan = (plan_model(model, args.size, probe, share, len(arms), args.rounds, layouts, args.settle_s, tuned,
                           trace) if share > 0 else None)
        if plan is None:
            report["ab"].append({"model": model, "size": args.size, "skipped": (
                f"does not fit the budget: its fewest steps need about {minimal[model]:.0f} s, {share:.0f} s left "
                f"for it (probe: {probe['step_ms']:.1f} ms a step, {probe['overhead_s']:.1f} s a process)")})
            write(report, args.out_dir)
            log(f"{model}: skipped, does not fit")
            continue
        log(f"{model}: warmup {plan.warmup}, steps {plan.steps}, settle <= {plan.settle_autotune}, "
            f"{args.rounds} rounds x {len(arms)} arms, predicted {plan.predicted_s:.0f} s of {share:.0f} s")
        from graphi_tf.lab.cli_common import Case

        case = Case(model=model, size=args.size, mode="graph")
        t0 = time.monotonic()
        try:
            doc = ab.run_ab(case, os.path.join(args.out_dir, f"ab_{model}"), arms=arms, warmup=plan.warmup,
                            steps=plan.steps, repeats=args.rounds, tune_warmup=TUNE_WARMUP,
                            tune_steps=TUNE_STEPS, trace_steps=args.trace_steps,
                            settle_autotune=plan.settle_autotune,
                            timeout=max(120.0, 4 * plan.predicted_s / max(1, len(arms))),
                            python=args.python, png=False)
        except Exception as e:  # one case failing leaves the others
            report["ab"].append({"model": model, "size": args.size, "error": f"{type(e).__name__}: {e}"})
            write(report, args.out_dir)
            continue
        summary = summarize_ab(doc, plan)
        summary.update(rounds=args.rounds, took_s=round(time.monotonic() - t0, 1))
        report["ab"].append(summary)
        write(report, args.out_dir)
        log(f"{model}: took {summary['took_s']:.0f} s; " + "; ".join(doc.get("lead") or []))
    write(report, args.out_dir, png=True)
    print(render_markdown({k: v for k, v in report.items() if not k.startswith("_")}))
    log(f"wrote {args.out_dir}/bench.json, bench.md, bench.png in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
