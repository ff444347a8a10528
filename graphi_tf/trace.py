"""Step timelines of GRAPHI graphs: Chrome trace-event JSON, a Gantt chart, a text summary.

``graphi_tf.trace.record_step(step_fn)`` runs a few warm-up steps, asks every GRAPHI graph
to record its next step (which node ran on which executor team, when), runs one step, and
returns a :class:`Trace`:

    trace = graphi_tf.trace.record_step(step, warmup=10)
    trace.write("step.json")          # open in https://ui.perfetto.dev or chrome://tracing
    trace.write_gantt("step.png")     # needs matplotlib
    print(trace.summary())

With no code change, ``GRAPHI_TRACE=path.json`` (read at ``import graphi_tf``) records step
``GRAPHI_TRACE_STEP`` (default 10) of every GRAPHI graph the process runs, or a graph's last
step if it ran fewer, and writes the trace to ``path.json`` at exit;
``GRAPHI_TRACE_PNG=1`` (or a path) also writes the Gantt chart. See docs/tracing.md.

The numbers of a graph's step:
  W  = work: the sum of the op execution times of the step;
  CP = critical path: the longest chain through the step's executed nodes on the static
       graph (data and control edges, loop back edges removed, as the cost model does),
       each node weighted by its measured time in this step (summed over its executions);
  LB = max(CP, W / cores): no schedule on the teams' cores beats it.
A shared op (``"shared": true``) ran on its team's work-conserving pool, split into blocks
that idle teams' leaders may take; it is drawn on its own team's track, marked, and the
summary's "helping other teams" gives the time other teams spent on such blocks. A merged op
(``"teams"`` / ``"merged": true``, recorded by earlier versions with team merging) ran on
several teams' cores at once: it is drawn on every team track it used and counted once in W.
"""
from __future__ import annotations

import atexit
import dataclasses
import json
import os
import sys
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from graphi_tf import environment as _environment
from graphi_tf import stepstats

DEFAULT_TRACE_STEP = 10
DEFAULT_WARMUP = 10
CRITICAL_PATH_TID = 1
_TEAM_TID_BASE = 10
_LANE_TID_STRIDE = 1000


# ---------------------------------------------------------------------------
# The data


@dataclasses.dataclass
class GraphStep:
    """One recorded step of one graph.

    Times are steady-clock nanoseconds. ``executions`` are dicts with ``node_id``, ``node``,
    ``op``, ``team``, ``start_ns``, ``end_ns``, ``shared`` (bool: split on its team's
    work-conserving pool) and, from earlier versions, optionally ``teams`` (list of team ids)
    and ``merged`` (bool) for an op that ran on several teams at once.
    """

    signature: str
    node_names: List[str]
    node_types: List[str]
    successors: List[List[int]]
    step: int
    start_ns: int
    end_ns: int
    executions: List[dict]
    wall_start_unix_ns: int = 0

    def __post_init__(self) -> None:
        n = len(self.node_names)
        times = [0] * n
        for e in self.executions:
            node = int(e["node_id"])
            if 0 <= node < n:
                times[node] += max(0, int(e["end_ns"]) - int(e["start_ns"]))
        self.node_time_ns: List[int] = times
        self.work_ns: int = sum(times)
        succ = self.successors if len(self.successors) == n else [[] for _ in range(n)]
        cp, path = stepstats.critical_path(succ, times)
        self.critical_path_ns: int = int(cp)
        # Only nodes that ran in this step are drawn; a path may pass through nodes that
        # did not (dead branches), which weigh 0.
        executed = {int(e["node_id"]) for e in self.executions}
        self.critical_path_nodes: List[int] = [node for node in path if node in executed]
        if self.executions:
            first = min(int(e["start_ns"]) for e in self.executions)
            last = max(int(e["end_ns"]) for e in self.executions)
            # The recorder's step span covers its ops; widen it if a clock read raced.
            self.start_ns = min(self.start_ns, first) if self.start_ns > 0 else first
            self.end_ns = max(self.end_ns, last)

    @property
    def step_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    @property
    def node_count(self) -> int:
        return len(self.node_names)

    def op_type(self, node_id: int) -> str:
        if 0 <= node_id < len(self.node_types) and self.node_types[node_id]:
            return self.node_types[node_id]
        return ""

    @staticmethod
    def teams_of(execution: dict) -> List[int]:
        """The teams an execution ran on: its ``teams`` list if merged, else its team."""
        teams = execution.get("teams")
        if teams:
            return sorted({int(t) for t in teams})
        return [int(execution["team"])]


@dataclasses.dataclass
class Trace:
    """Recorded steps of one or more GRAPHI graphs, with the team layout they ran on.

    Fields:
      graphs: one :class:`GraphStep` per graph, largest (most work) first.
      executors, threads_per_executor, policy: the layout in force when collected.
      team_cpus: cpu ids per team.
      shared_clock: the steps were one step of the caller (``record_step``), so every graph is
        drawn relative to the earliest step start; otherwise each relative to its own start.
      stolen_ns: per team, the time its leader spent running blocks of other teams' ops
        during the recorded step (work conservation; ``record_step`` fills it).
    """

    graphs: List[GraphStep]
    executors: int = 0
    threads_per_executor: int = 0
    policy: str = ""
    team_cpus: List[List[int]] = dataclasses.field(default_factory=list)
    shared_clock: bool = True
    stolen_ns: Dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def cores(self) -> int:
        """Distinct cpus of the team layout; at least 1 (a trace without a layout counts one)."""
        cpus = {c for team in self.team_cpus for c in team}
        return max(1, len(cpus))

    def lower_bound_ns(self, g: GraphStep) -> float:
        """LB = max(CP, W / cores) of graph ``g`` on this trace's cores (``stepstats.lower_bound``)."""
        return stepstats.lower_bound(g.work_ns, g.critical_path_ns, self.cores)

    def _origin_ns(self, g: GraphStep) -> int:
        if self.shared_clock and self.graphs:
            return min(x.start_ns for x in self.graphs)
        return g.start_ns

    def _team_label(self, team: int) -> str:
        if team < 0:
            return "caller thread"
        if team < len(self.team_cpus):
            cpus = ",".join(str(c) for c in self.team_cpus[team])
            return f"team {team} (cpus {cpus})"
        return f"team {team}"

    def _graph_summary(self, g: GraphStep) -> dict:
        return {
            "signature": g.signature,
            "node_count": g.node_count,
            "step": g.step,
            "step_ms": g.step_ns / 1e6,
            "work_ms": g.work_ns / 1e6,
            "critical_path_ms": g.critical_path_ns / 1e6,
            "lower_bound_ms": self.lower_bound_ns(g) / 1e6,
            "executions": len(g.executions),
            "critical_path_ops": len(g.critical_path_nodes),
            "wall_start_unix_ns": g.wall_start_unix_ns,
        }

    def layout(self) -> dict:
        return {
            "executors": self.executors,
            "threads_per_executor": self.threads_per_executor,
            "policy": self.policy,
            "team_cpus": [list(t) for t in self.team_cpus],
            "cores": self.cores,
        }

    # -- Chrome trace-event JSON -------------------------------------------

    def _graph_events(self, index: int, g: GraphStep) -> List[dict]:
        """The trace events of graph ``g``, process ``index + 1``: its name and track metadata,
        then one complete event per op execution and track it is drawn on."""
        events: List[dict] = []
        pid = index + 1
        origin = self._origin_ns(g)
        events.append(_meta("process_name", pid, 0,
                            {"name": f"GRAPHI graph {g.signature} ({g.node_count} nodes, step {g.step})"}))
        events.append(_meta("process_sort_index", pid, 0, {"sort_index": index}))
        on_cp = set(g.critical_path_nodes)
        # Greedy lanes per track (a team, or the critical path: key None) so that slices
        # on one track never partially overlap; an extra lane is an "overlap" track.
        lanes: Dict[Optional[int], List[int]] = {None: []}
        ops: List[dict] = []

        def place(key: Optional[int], start: int, end: int) -> int:
            track = lanes.setdefault(key, [])
            lane = next((i for i, free_at in enumerate(track) if free_at <= start), None)
            if lane is None:
                lane = len(track)
                track.append(end)
            else:
                track[lane] = end
            return _team_tid(key, lane)

        for e in sorted(g.executions, key=lambda e: (int(e["start_ns"]), int(e["end_ns"]))):
            node = int(e["node_id"])
            teams = GraphStep.teams_of(e)
            merged = bool(e.get("merged")) or len(teams) > 1
            start, end = int(e["start_ns"]), max(int(e["start_ns"]), int(e["end_ns"]))
            args = {
                "op": e.get("op") or g.op_type(node),
                "node": e.get("node") or (g.node_names[node] if 0 <= node < g.node_count else ""),
                "team": int(e["team"]),
                "critical_path": node in on_cp,
            }
            if merged:
                args["merged"] = True
                args["teams"] = teams
            if e.get("shared"):
                args["shared"] = True
            keys: List[Optional[int]] = list(teams) + ([None] if node in on_cp else [])
            for key in keys:
                ops.append(_complete(args["node"], args["op"] or "op", pid, place(key, start, end),
                                     start - origin, end - start, dict(args)))
        if not lanes[None]:
            lanes[None].append(0)  # the critical path track is listed even when empty
        for key in sorted(lanes, key=lambda k: -1 if k is None else k):
            base = (f"critical path ({_format_ns(g.critical_path_ns)})" if key is None
                    else self._team_label(key))
            for lane in range(len(lanes[key])):
                tid = _team_tid(key, lane)
                events.append(_meta("thread_name", pid, tid,
                                    {"name": base + ("" if lane == 0 else f" overlap {lane}")}))
                order = 0 if key is None else 1 + (key + 1) * 100
                events.append(_meta("thread_sort_index", pid, tid, {"sort_index": order + lane}))
        return events + ops

    def to_chrome_json(self) -> dict:
        """The trace in Chrome's JSON Object Format (opens in Perfetto and chrome://tracing).

        One process per graph; per process one track per executor team (``thread_name``
        "team K (cpus ...)", extra "overlap" tracks only if ops on a team overlapped in time)
        and a "critical path" track; one complete event ("X") per op execution, ts/dur in
        microseconds from the step start. ``otherData`` carries step time, W, CP, LB, cores
        and the team layout (for the first, largest graph at top level; all under "graphs").
        """
        events: List[dict] = []
        for index, g in enumerate(self.graphs):
            events.extend(self._graph_events(index, g))
        summaries = [self._graph_summary(g) for g in self.graphs]
        other: Dict[str, Any] = {"producer": "graphi_tf.trace", "time_unit": "us", **self.layout()}
        if summaries:
            main = summaries[0]
            for key in ("signature", "step", "step_ms", "work_ms", "critical_path_ms", "lower_bound_ms"):
                other[key] = main[key]
        other["graphs"] = summaries
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}

    def write(self, path: str) -> str:
        """Writes the Chrome trace JSON to `path`; returns the path."""
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_chrome_json(), f)
        return path

    # -- Gantt chart ---------------------------------------------------------

    def write_gantt(self, path: str) -> str:
        """Writes a Gantt chart PNG (one row per team, a bar per op; critical path in red)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            from matplotlib.patches import Patch
        except ImportError as e:
            raise RuntimeError("write_gantt needs matplotlib: pip install matplotlib") from e
        graphs = self.graphs[:4]
        if not graphs:
            raise ValueError("the trace holds no recorded step; nothing to draw")
        heights = [1.2 + 0.45 * (1 + len({t for e in g.executions for t in GraphStep.teams_of(e)}))
                   for g in graphs]
        fig, axes = plt.subplots(len(graphs), 1, figsize=(12, sum(heights) + 0.6), squeeze=False,
                                 gridspec_kw={"height_ratios": heights})
        for ax, g in zip(axes[:, 0], graphs):
            origin = g.start_ns
            teams = sorted({t for e in g.executions for t in GraphStep.teams_of(e)})
            rows = {team: i for i, team in enumerate(teams)}
            on_cp = set(g.critical_path_nodes)
            for e in g.executions:
                node = int(e["node_id"])
                x = (int(e["start_ns"]) - origin) / 1e3
                w = max(0.0, (int(e["end_ns"]) - int(e["start_ns"])) / 1e3)
                color = "#d62728" if node in on_cp else "#1f77b4"
                for team in GraphStep.teams_of(e):
                    ax.broken_barh([(x, w)], (rows[team] - 0.4, 0.8), facecolors=color,
                                   edgecolor="black" if e.get("merged") or e.get("shared") else "none",
                                   linewidth=0.3)
            ax.set_yticks(range(len(teams)))
            ax.set_yticklabels([self._team_label(t) for t in teams], fontsize=8)
            ax.invert_yaxis()
            step_us = g.step_ns / 1e3
            lb_us = self.lower_bound_ns(g) / 1e3
            ax.axvline(step_us, color="black", linestyle="-", linewidth=1)
            ax.axvline(lb_us, color="green", linestyle="--", linewidth=1)
            ax.set_xlim(0, max(step_us, lb_us) * 1.02 or 1)
            ax.set_title(f"graph {g.signature} ({g.node_count} nodes, step {g.step}): "
                         f"step {step_us / 1e3:.3f} ms, W {g.work_ns / 1e6:.3f} ms, "
                         f"CP {g.critical_path_ns / 1e6:.3f} ms, LB {lb_us / 1e3:.3f} ms "
                         f"({self.cores} cores)", fontsize=9)
            ax.set_xlabel("us since step start", fontsize=8)
        fig.legend(handles=[Patch(color="#1f77b4", label="op"),
                            Patch(color="#d62728", label="critical path op"),
                            plt.Line2D([], [], color="green", linestyle="--", label="LB = max(CP, W/cores)"),
                            plt.Line2D([], [], color="black", label="step end")],
                   loc="lower center", ncol=4, fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path

    # -- Text ------------------------------------------------------------------

    def team_busy_ns(self, g: GraphStep) -> Dict[int, int]:
        """Per team, the time some op ran on it (union of its ops' intervals)."""
        intervals: Dict[int, List[Tuple[int, int]]] = {}
        for e in g.executions:
            for team in GraphStep.teams_of(e):
                intervals.setdefault(team, []).append((int(e["start_ns"]), int(e["end_ns"])))
        busy = {}
        for team, spans in intervals.items():
            total, cur_s, cur_e = 0, None, None
            for s, e in sorted(spans):
                if cur_e is None or s > cur_e:
                    if cur_e is not None:
                        total += cur_e - cur_s
                    cur_s, cur_e = s, e
                else:
                    cur_e = max(cur_e, e)
            if cur_e is not None:
                total += cur_e - cur_s
            busy[team] = total
        return busy

    def summary(self, top: int = 5) -> str:
        """Step time, W, CP, LB, per-team busy %, and the longest ops on the critical path."""
        lines = [f"GRAPHI step trace: {len(self.graphs)} graph{'s' if len(self.graphs) != 1 else ''}, "
                 f"layout {self.executors}x{self.threads_per_executor} "
                 f"({self.cores} core{'s' if self.cores != 1 else ''}), policy {self.policy or '?'}"]
        for g in self.graphs:
            step_ms = g.step_ns / 1e6
            lb_ms = self.lower_bound_ns(g) / 1e6
            eff = f", LB/step {100.0 * lb_ms / step_ms:.0f}%" if step_ms > 0 else ""
            lines.append(f"graph {g.signature} ({g.node_count} nodes, step {g.step}, "
                         f"{len(g.executions)} op runs)")
            lines.append(f"  step {step_ms:.3f} ms   W {g.work_ns / 1e6:.3f} ms   "
                         f"CP {g.critical_path_ns / 1e6:.3f} ms   LB {lb_ms:.3f} ms{eff}")
            busy_ns = self.team_busy_ns(g)
            for team in sorted(set(busy_ns) | set(self.stolen_ns)):
                busy = busy_ns.get(team, 0)
                pct = 100.0 * busy / g.step_ns if g.step_ns > 0 else 0.0
                line = f"  {self._team_label(team)}: busy {busy / 1e6:.3f} ms ({pct:.0f}%)"
                if team in self.stolen_ns:
                    stolen = self.stolen_ns[team]
                    share = 100.0 * stolen / g.step_ns if g.step_ns > 0 else 0.0
                    line += f", helping other teams {stolen / 1e6:.3f} ms ({share:.0f}%)"
                lines.append(line)
            shared = [e for e in g.executions if e.get("shared")]
            if shared:
                shared_ns = sum(max(0, int(e["end_ns"]) - int(e["start_ns"])) for e in shared)
                lines.append(f"  ops offered to idle teams: {len(shared)} op run"
                             f"{'s' if len(shared) != 1 else ''}, {shared_ns / 1e6:.3f} ms")
            cp = sorted(g.critical_path_nodes, key=lambda n: -g.node_time_ns[n])[:top]
            if cp:
                lines.append(f"  critical path: {len(g.critical_path_nodes)} ops; longest:")
                for node in cp:
                    lines.append(f"    {g.node_time_ns[node] / 1e6:8.3f} ms  {g.op_type(node) or '?':<20} "
                                 f"{g.node_names[node]}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _format_ns(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.3f} us"


def _team_tid(team: Optional[int], lane: int) -> int:
    """The tid of a team's track (None: the critical path track); lanes > 0 are overlap tracks."""
    if team is None:
        return CRITICAL_PATH_TID + lane * _LANE_TID_STRIDE
    return _TEAM_TID_BASE + (team if team >= 0 else 999) + lane * _LANE_TID_STRIDE


def _meta(name: str, pid: int, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "ts": 0, "args": args}


def _complete(name: str, cat: str, pid: int, tid: int, start_ns: int, dur_ns: int, args: dict) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid,
            "ts": round(start_ns / 1e3, 3), "dur": round(max(0, dur_ns) / 1e3, 3), "args": args}


# ---------------------------------------------------------------------------
# Collecting


def _native() -> Any:
    from graphi_tf import _loader

    return _loader.native()


def collect(signatures: Optional[Iterable[str]] = None, *, shared_clock: bool = False,
            min_step: Dict[str, int] = None, native: Any = None) -> Trace:
    """Builds a Trace from the last recorded step of each graph (or of `signatures`).

    Graphs without a recorded step (or, with `min_step`, whose recorded step is not newer
    than min_step[signature]) are left out.
    """
    native = native or _native()
    wanted = list(signatures) if signatures is not None else [str(g["signature"]) for g in native.graphs()]
    steps: List[GraphStep] = []
    for sig in wanted:
        record = native.last_step_record(sig)
        if int(record["step"]) <= 0 or not record["executions"]:
            continue
        if min_step is not None and int(record["step"]) <= min_step.get(sig, 0):
            continue
        profile = native.graph_profile(sig)
        steps.append(GraphStep(signature=sig, node_names=list(profile["node_names"]),
                               node_types=list(profile["node_types"]),
                               successors=[list(s) for s in profile["successors"]],
                               step=int(record["step"]), start_ns=int(record["start_ns"]),
                               end_ns=int(record["end_ns"]), executions=list(record["executions"]),
                               wall_start_unix_ns=int(record["wall_start_unix_ns"])))
    steps.sort(key=lambda g: (-g.work_ns, g.signature))
    info = native.runtime_info()
    return Trace(graphs=steps, executors=int(info.get("executors", 0) or 0),
                 threads_per_executor=int(info.get("threads_per_executor", 0) or 0),
                 policy=str(info.get("policy", "") or ""),
                 team_cpus=[list(t) for t in info.get("teams", []) or []], shared_clock=shared_clock)


def _stolen_ns(native: Any) -> List[int]:
    """Per team, the time its leader has spent on other teams' blocks so far."""
    return [int(ns) for ns in native.scheduler_stats().get("stolen_ns_per_team", [])]


def record_step(step_fn: Callable[[], Any], *, warmup: int = DEFAULT_WARMUP,
                graphs: Optional[Iterable[str]] = None) -> Trace:
    """Runs `warmup` steps, then one recorded step of every GRAPHI graph; returns its Trace.

    Args:
      step_fn: runs one step (a ``session.run``, a ``tf.function`` call) on GRAPHI.
      warmup: untimed steps first (>= 1: the graphs must exist to be armed; costs and
        ranks settle over the first steps).
      graphs: signatures to record; None for every GRAPHI graph the step runs.

    Raises:
      ValueError: warmup is not a whole number >= 1.
      RuntimeError: the step ran no GRAPHI graph.
    """
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise ValueError(f"warmup={warmup!r} is invalid; allowed: a whole number >= 1")
    native = _native()
    for _ in range(warmup):
        step_fn()
    before = stepstats.steps_run(native.graphs())
    wanted = list(before) if graphs is None else [str(s) for s in graphs]
    unknown = [s for s in wanted if s not in before]
    if unknown:
        raise ValueError(f"graphs={unknown!r}: no GRAPHI graph with that signature has run; "
                         f"allowed: {sorted(before)}")
    for sig in wanted:
        native.record_next_step(sig)
    stolen_before = _stolen_ns(native)
    step_fn()
    stolen_after = _stolen_ns(native)
    ran_now = {str(g["signature"]) for g in stepstats.ran_since(before, native.graphs())}
    ran = [s for s in wanted if s in ran_now]
    trace = collect(ran, shared_clock=True, min_step=before, native=native)
    if len(stolen_before) == len(stolen_after):
        trace.stolen_ns = {k: after_ns - before_ns
                           for k, (before_ns, after_ns) in enumerate(zip(stolen_before, stolen_after))}
    if not trace.graphs:
        raise RuntimeError("the step ran no GRAPHI graph (or none recorded): run it on GRAPHI "
                           "(graphi_tf.session_config() for sessions, graphi_tf.executor_scope() "
                           "for tf.function)")
    return trace


# ---------------------------------------------------------------------------
# GRAPHI_TRACE: record without code changes


def _trace_step_from_env(env: _environment.Environment) -> int:
    text = env.trace_step
    if not text:
        return DEFAULT_TRACE_STEP
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        warnings.warn(f"GRAPHI_TRACE_STEP={text!r} is invalid; allowed: a whole number >= 1 "
                      f"(the step number to record). Using the default, {DEFAULT_TRACE_STEP}.",
                      RuntimeWarning, stacklevel=3)
        return DEFAULT_TRACE_STEP
    return value


def _png_path_from_env(env: _environment.Environment, json_path: str) -> Optional[str]:
    text = env.trace_png
    if text in ("", "0"):
        return None
    if text == "1":
        root, ext = os.path.splitext(json_path)
        return (root if ext.lower() == ".json" else json_path) + ".png"
    return text


_env_state: Dict[str, Any] = {}


def install_from_env(environ: Optional[Dict[str, str]] = None) -> bool:
    """Arms GRAPHI_TRACE recording if the environment asks for it (called by ``import graphi_tf``).

    Returns whether recording was armed.
    """
    env = _environment.read(environ)
    path = env.trace
    if not path or _env_state:
        return False
    step = _trace_step_from_env(env)
    _native().record_steps_through(step)
    _env_state.update(path=path, step=step, png=_png_path_from_env(env, path))
    atexit.register(_write_env_trace)
    return True


def _write_env_trace() -> None:
    path, png = _env_state.get("path"), _env_state.get("png")
    try:
        trace = collect(shared_clock=False)
        trace.write(path)
        if png:
            trace.write_gantt(png)
        sys.stderr.write(f"graphi_tf: wrote a step trace of {len(trace.graphs)} GRAPHI graph(s) to {path}"
                         + (f" and {png}" if png else "") + "\n")
    except Exception as e:  # at exit: report, never raise
        sys.stderr.write(f"graphi_tf: GRAPHI_TRACE={path}: could not write the trace: {e}\n")
