"""One process of ``graphi-tf ab``: runs one arm (or the tuning run, or the reference run)
and prints one JSON line on stdout.

    python -m graphi_tf.lab._ab_worker --role arm --executor DEFAULT --inter 2 --intra 1 \\
        --model lstm --size small --mode graph --warmup 100 --steps 50
    python -m graphi_tf.lab._ab_worker --role tune --executor GRAPHI --script step.py --warmup 10 --steps 10
    python -m graphi_tf.lab._ab_worker --role reference --executor DEFAULT --inter 1 --intra 1 \\
        --model lstm --size small --mode graph --warmup 10 --steps 20 --trace-steps 5

Roles:
  arm        warm-up steps, then timed steps (then, with ``--clients``, one phase of
             concurrent requests per client count: ``graphi_tf.lab.clients.serve``, reported in
             "clients"); reports the step times (ms), examples_per_step,
             graph_nodes, the setting in force and, for non-GRAPHI executors, proof that
             GRAPHI did nothing (no thread named graphi-* in /proc/self/task/*/comm, no
             GRAPHI graph ran). ``--expect-source cache`` makes it fail unless GRAPHI ran the
             main graph with a setting from the cache (the graphi_tuned arm). A GRAPHI arm
             also reports the main graph's online autotuning state (info() graphs[]
             "autotune", when this GRAPHI has it) when timing began and at the end.
  tune       ``graphi_tf.tune`` on the step (its warm-up/steps per setting), which caches
             the fastest setting in GRAPHI_CACHE_DIR.
  reference  warm-up, untraced timed steps, then ``--trace-steps`` steps with FULL_TRACE
             (``step.run_traced()``); reports W and CP of each traced step
             (``graphi_tf.lab.bound``), the untraced median and the usable cores. It runs the
             case's ``Case.reference_case()`` (a function-mode model as its graph build, a
             tf2-loaded SavedModel through the TF1 loader) and says so in "note".
  arm --lockstep  the warm-up (and --settle-autotune; with ``--clients``, then the untimed
             warm-up under each client count, reported in "clients_settle"), then
             ``{"lockstep": "ready"}`` on stdout; for each ``phase N D`` line on stdin, D
             untimed and N timed steps, answered by ``{"step_times_ms": [...]}``; for each
             ``serve N D S`` line, N clients for D untimed and S timed seconds, answered by
             ``{"clients_phase": {...}}``; after ``end``, the arm's result (every phase's
             times in "step_times_ms"). ``graphi_tf.lab.lockstep`` drives it.
  check      builds the step once and closes it; a bad case (cli_common.UsageError, e.g. a
             .keras file that needs custom objects) is reported in "usage_error".

The team layout and cache come from the environment the orchestrator sets (GRAPHI_CACHE_DIR
and the arm's own variables, graphi_tf.lab.arms). Every role reports GRAPHI_CACHE_DIR and the
files in it before the step was built (importing graphi_tf only reads the cache) and at the end.

Applying an arm to a ``--script`` without changing it:
  * inter/intra: ``tf.config.threading`` is set before the script is imported (TF2 eager
    and tf.function), and TF1 sessions get them too (next point).
  * TF1 sessions: ``tf.compat.v1.Session`` and ``tf.compat.v1.InteractiveSession`` are
    replaced, before the script is imported, by subclasses that copy the ``config`` they
    are given and, if it names no executor_type, set the arm's executor_type (not for
    DEFAULT); if it leaves inter_op/intra_op_parallelism_threads at 0, they set the arm's.
    Sessions made another way (``tensorflow.python.client.session.Session``,
    ``MonitoredSession``) are not patched; a session config that names an executor
    explicitly keeps it (and a stock arm that then runs GRAPHI fails its proof).
  * tf.function: each step call runs inside
    ``tf.experimental.function_executor_type(executor)`` (not for DEFAULT).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from graphi_tf import environment, stepstats

from graphi_tf.lab import ab, cli_common
from graphi_tf.lab import clients as _clients
from graphi_tf.lab.models import EXECUTORS

ROLES = ("arm", "tune", "reference", "check")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m graphi_tf.lab._ab_worker", description=__doc__.split("\n\n")[0])
    p.add_argument("--role", choices=ROLES, required=True)
    p.add_argument("--executor", choices=EXECUTORS, required=True)
    p.add_argument("--inter", type=int, default=None, help="inter-op threads (default: TF's)")
    p.add_argument("--intra", type=int, default=None, help="intra-op threads (default: TF's)")
    cli_common.add_case_arguments(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=ab.DEFAULT_WARMUP)
    p.add_argument("--steps", type=int, default=ab.DEFAULT_STEPS)
    p.add_argument("--trace-steps", type=int, default=ab.DEFAULT_TRACE_STEPS)
    p.add_argument("--expect-source", default=None,
                   help="fail unless the main GRAPHI graph's setting came from this source")
    p.add_argument("--clients", type=ab.client_list, default=None, metavar="N,N,...",
                   help="arm: after the timed steps, N threads issue requests (steps) back to back for "
                        "--duration seconds, for each N in turn (graphi_tf.lab.clients.serve)")
    p.add_argument("--duration", type=float, default=_clients.DEFAULT_DURATION_S,
                   help="seconds of each --clients phase")
    p.add_argument("--settle-autotune", type=int, default=0, metavar="MAX",
                   help="GRAPHI: after the warm-up, keep stepping (at most MAX more steps) while the "
                        "main graph's online autotuning is still waiting or exploring, so the timed "
                        "steps measure what it settled on (default 0: do not wait)")
    p.add_argument("--lockstep", action="store_true",
                   help="arm: after the warm-up, send a ready line and time one phase per 'phase N D' "
                        "line on stdin (D untimed, N timed steps) until 'end' (graphi_tf.lab.lockstep)")
    return p


class WorkerError(RuntimeError):
    pass


class CaseError(WorkerError):
    """The case cannot be built as asked (a ``cli_common.UsageError``)."""


# ------------------------------------------------------------------------ building the step


def _patch_sessions(tf: Any, executor: str, inter: Optional[int], intra: Optional[int],
                    created: List[Any]) -> None:
    v1 = tf.compat.v1

    def adjust(config: Any) -> Any:
        c = v1.ConfigProto()
        if config is not None:
            c.CopyFrom(config)
        if not c.experimental.executor_type and executor != "DEFAULT":
            c.experimental.executor_type = executor
        if inter is not None and c.inter_op_parallelism_threads == 0:
            c.inter_op_parallelism_threads = inter
        if intra is not None and c.intra_op_parallelism_threads == 0:
            c.intra_op_parallelism_threads = intra
        return c

    base_session, base_interactive = v1.Session, v1.InteractiveSession

    class Session(base_session):  # type: ignore[misc, valid-type]
        __doc__ = base_session.__doc__

        def __init__(self, target: str = "", graph: Any = None, config: Any = None):
            super().__init__(target, graph, adjust(config))
            created.append(self)

    class InteractiveSession(base_interactive):  # type: ignore[misc, valid-type]
        __doc__ = base_interactive.__doc__

        def __init__(self, target: str = "", graph: Any = None, config: Any = None):
            super().__init__(target, graph, adjust(config))
            created.append(self)

    v1.Session = Session
    v1.InteractiveSession = InteractiveSession


class _ScriptStep:
    """A script's step with the arm applied to its tf.function calls."""

    def __init__(self, tf: Any, step: Callable[[], Any], executor: str, sessions: List[Any]):
        self._tf = tf
        self._step = step
        self._executor = executor
        self._sessions = sessions
        self.examples_per_step = getattr(step, "examples_per_step", None)
        nodes = getattr(step, "graph_nodes", None)
        if nodes is None and sessions:
            nodes = max(len(s.graph.as_graph_def().node) for s in sessions)
        self.graph_nodes = nodes

    def _scope(self) -> Any:
        if self._executor == "DEFAULT":
            return contextlib.nullcontext()
        return self._tf.experimental.function_executor_type(self._executor)

    def __call__(self) -> Any:
        with self._scope():
            return self._step()

    def run_traced(self) -> Any:
        run_traced = getattr(self._step, "run_traced", None)
        if run_traced is None:
            raise WorkerError("the script's step has no run_traced() (returning a RunMetadata "
                              "with FULL_TRACE step stats), so the physical limit cannot be measured")
        with self._scope():
            return run_traced()


def _build_step(case: cli_common.Case, tf: Any, executor: str, inter: Optional[int], intra: Optional[int]) -> Any:
    """The case's step on the arm (``cli_common.build_step``); a script's with the arm
    applied around it (module docstring)."""
    if case.script:
        if inter is not None:
            tf.config.threading.set_inter_op_parallelism_threads(inter)
        if intra is not None:
            tf.config.threading.set_intra_op_parallelism_threads(intra)
        sessions: List[Any] = []
        _patch_sessions(tf, executor, inter, intra, sessions)
    try:
        step = cli_common.build_step(case, executor=executor, inter_op=inter, intra_op=intra)
    except cli_common.UsageError as e:
        raise CaseError(str(e)) from None
    return _ScriptStep(tf, step, executor, sessions) if case.script else step


# ------------------------------------------------------------------------ evidence


def _thread_names() -> List[str]:
    names = []
    base = "/proc/self/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            continue
    return names


def _graphi_graphs() -> List[dict]:
    import graphi_tf

    return [dict(g) for g in graphi_tf._loader.native().graphs()]


def _main_graph(graphs: List[dict], before: Optional[Dict[str, int]] = None) -> Optional[dict]:
    """The step's main GRAPHI graph: the largest one that ran since ``before`` (steps_run
    per signature, taken after the step was built; ``stepstats.ran_since``), so a one-off
    graph such as the variables' initializer, however large, is not taken for the training step."""
    ran = stepstats.ran_since(before, graphs)
    return ran[0] if ran else None


def _graph_steps() -> Dict[str, int]:
    """steps_run per GRAPHI graph signature, now."""
    import graphi_tf

    return stepstats.steps_run(graphi_tf.info().get("graphs", []))


def _graphi_setting(before: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    import graphi_tf

    return setting_from_info(graphi_tf.info(), before)


def setting_from_info(info: Dict[str, Any], before: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """What GRAPHI had in force, from a ``graphi_tf.info()`` dict: the runtime's layout and
    the main graph's (``_main_graph``) layout, policy, source and, when the main graph
    reports one, its online autotuning state ("autotune")."""
    main = _main_graph([dict(g) for g in info.get("graphs", [])], before)
    setting = {
        "executor": "GRAPHI",
        "runtime": {"executors": info.get("executors"), "threads_per_executor": info.get("threads_per_executor"),
                    "policy": info.get("policy"), "source": info.get("setting_source")},
        "graphs_run": sum(1 for g in info.get("graphs", []) if int(g.get("steps_run", 0)) > 0),
    }
    if main is not None:
        setting.update(signature=str(main["signature"]), node_count=int(main.get("node_count", 0)),
                       executors=main.get("executors"), threads_per_executor=main.get("threads_per_executor"),
                       policy=main.get("policy"), source=main.get("source"))
        if main.get("autotune") is not None:  # GRAPHI's online autotuning (absent before it existed)
            setting["autotune"] = dict(main["autotune"])
    return setting


def _stock_setting(tf: Any, executor: str, inter: Optional[int], intra: Optional[int]) -> Dict[str, Any]:
    return {
        "executor": executor,
        "inter_op": inter,  # None: TensorFlow's default pool size
        "intra_op": intra,
        "tf_config_threading": {"inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
                                "intra_op": tf.config.threading.get_intra_op_parallelism_threads()},
    }


def _proof() -> Dict[str, Any]:
    graphi_threads = sorted(n for n in _thread_names() if n.startswith("graphi"))
    graphs = _graphi_graphs()
    steps_run = sum(int(g.get("steps_run", 0)) for g in graphs)
    return {
        "graphi_threads": graphi_threads,
        "graphi_graphs_run": sum(1 for g in graphs if int(g.get("steps_run", 0)) > 0),
        "graphi_steps_run": steps_run,
        "graphi_did_nothing": not graphi_threads and steps_run == 0,
        "checked": "thread names in /proc/self/task/*/comm; graphi_tf native graphs() steps_run",
    }


def _cache_entries() -> Optional[List[str]]:
    """The files in GRAPHI_CACHE_DIR (sorted), None if it is unset or not a directory."""
    path = environment.read().cache_dir or None
    if not path or not os.path.isdir(path):
        return None
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, files in os.walk(path) for f in files)


# ------------------------------------------------------------------------ roles


Emit = Callable[[Dict[str, Any]], None]


def _run(args: argparse.Namespace, emit: Emit) -> Dict[str, Any]:
    result: Dict[str, Any] = {"role": args.role, "executor": args.executor, "inter_op": args.inter,
                              "intra_op": args.intra, "pid": os.getpid(),
                              "cache_dir": environment.read().cache_dir or None,
                              "cache_entries_at_start": _cache_entries()}
    try:
        return _run_role(args, result, emit)
    finally:
        result["cache_entries_at_end"] = _cache_entries()


def _run_role(args: argparse.Namespace, result: Dict[str, Any], emit: Emit) -> Dict[str, Any]:
    import tensorflow as tf

    import graphi_tf

    case = _role_case(args, result)
    step = _build_step(case, tf, args.executor, args.inter, args.intra)
    if args.role == "check":
        cli_common.close_step(step)
        result["ok"] = True
        return result
    result["examples_per_step"] = getattr(step, "examples_per_step", None)
    result["graph_nodes"] = getattr(step, "graph_nodes", None)

    if args.role == "tune":
        # Only the warm-up/steps keywords: the rest of tune()'s defaults (it caches the result).
        tuned = graphi_tf.tune(step, warmup=args.warmup, steps=args.steps)
        result.update(tune=tuned.to_dict(), ok=True)
        return result
    lockstep = args.role == "arm" and args.lockstep
    timed = _time_steps(step, args, 0 if lockstep else args.steps)
    if lockstep:
        if args.clients:  # decided under each load before the phases, as --settle-autotune alone
            result["clients_settle"] = [dict(_settle_under_load(step, n, args, timed.built), clients=n)
                                        for n in args.clients]
        timed.times = _lockstep_phases(step, emit)
    result.update(step_times_ms=timed.times, ok=True)
    if args.role == "arm" and args.clients and not lockstep:
        result["clients"] = [_serve_settled(step, n, args, timed.built) for n in args.clients]
    if args.role == "reference":
        result.update(_traced_steps(step, args.trace_steps),
                      untraced_step_ms=stepstats.median(timed.times) if timed.times else None)
    elif args.executor == "GRAPHI":
        _check_graphi_arm(args, timed, result)
    else:
        _check_stock_arm(tf, args, result)
    return result


# Every arm's clients phase starts after this much of the same load, untimed (thread pools
# and caches warmed under concurrency); a GRAPHI arm whose autotuner explores under that
# load (it explores again once steps keep overlapping) goes on, up to SERVE_SETTLE_MAX_S,
# until it has decided, so the phase shows what it settled on (as --settle-autotune does
# one step at a time); the time is reported in the phase's "warmup".
SERVE_WARMUP_S = 1.0
SERVE_SETTLE_MAX_S = 30.0
# What a serving warm-up records of the autotuner's status under its load.
SETTLED_AUTOTUNE_FIELDS = ("state", "chosen", "reason", "load_class")


def _serve_settled(step: Callable[[], Any], clients: int, args: argparse.Namespace,
                   built: Dict[str, int]) -> Dict[str, Any]:
    warmup = _settle_under_load(step, clients, args, built)
    phase = _clients.serve(step, clients, args.duration)
    phase["warmup"] = warmup
    return phase


def _settle_under_load(step: Callable[[], Any], clients: int, args: argparse.Namespace,
                       built: Dict[str, int]) -> Dict[str, Any]:
    """The untimed warm-up under ``clients`` concurrent clients (above); returns
    {"seconds", "phases", "autotune_state", "autotune"}: the last, on a settling GRAPHI arm,
    the autotuner's state, choice, reason and load class once settled under this load (the
    arm's final "autotune" is only that of the last load)."""
    graphi = args.executor == "GRAPHI" and args.settle_autotune > 0
    began = time.perf_counter()
    warmups = 0
    while True:
        _clients.serve(step, clients, SERVE_WARMUP_S)
        warmups += 1
        status = (_graphi_setting(built).get("autotune") or {}) if graphi else {}
        state = status.get("state")
        if state != "exploring" or time.perf_counter() - began >= SERVE_SETTLE_MAX_S:
            break
    decided = {key: status.get(key) for key in SETTLED_AUTOTUNE_FIELDS} if status else None
    return {"seconds": time.perf_counter() - began, "phases": warmups, "autotune_state": state,
            "autotune": decided}


def _role_case(args: argparse.Namespace, result: Dict[str, Any]) -> cli_common.Case:
    """The case this role builds: the reference role's is ``Case.reference_case()`` (FULL_TRACE
    needs a Session), noted in ``result``."""
    try:
        case = cli_common.Case.from_args(args)
    except cli_common.UsageError as e:
        raise CaseError(str(e)) from None
    if args.role != "reference":
        return case
    reference, note = case.reference_case()
    if reference is None:
        raise WorkerError(f"no physical limit for {case.name}: {note}")
    if note:
        result["note"] = note
    return reference


@dataclasses.dataclass
class _Timed:
    """The timed steps of an arm and, on GRAPHI, its setting at the first step and when timing began."""

    times: List[float]
    built: Dict[str, int]  # steps_run per graph after the step was built (``stepstats.steps_run``)
    first: Dict[str, Any]
    at_timing_start: Dict[str, Any]
    # --settle-autotune: the untimed steps run after the warm-up while autotuning explored.
    settle: Optional[Dict[str, Any]] = None


def _lockstep_phases(step: Callable[[], Any], emit: Emit) -> List[float]:
    """The lockstep protocol after the warm-up (graphi_tf.lab.lockstep); returns every
    phase's timed steps (ms) in order (the serving phases' statistics go out as they end)."""
    emit({"lockstep": "ready"})
    every: List[float] = []
    for line in sys.stdin:
        words = line.split()
        if words == ["end"]:
            return every
        serve = _serve_phase_args(words)
        if serve is not None:
            clients, discard_s, duration_s = serve
            if discard_s > 0:
                _clients.serve(step, clients, discard_s)
            emit({"clients_phase": _clients.serve(step, clients, duration_s)})
            continue
        if len(words) != 3 or words[0] != "phase" or not (words[1].isdigit() and words[2].isdigit()):
            raise WorkerError(f"lockstep: expected 'phase N D', 'serve N D S' or 'end', got {line.strip()!r}")
        times = stepstats.time_steps(step, int(words[1]), untimed=int(words[2]))
        every.extend(times)
        emit({"step_times_ms": times})
    raise WorkerError("lockstep: stdin closed before 'end'")


def _serve_phase_args(words: List[str]) -> Optional[Tuple[int, float, float]]:
    """(clients, untimed s, timed s) of a ``serve N D S`` line, None for any other line."""
    if len(words) != 4 or words[0] != "serve" or not words[1].isdigit() or int(words[1]) < 1:
        return None
    try:
        discard_s, duration_s = float(words[2]), float(words[3])
    except ValueError:
        return None
    return (int(words[1]), discard_s, duration_s) if discard_s >= 0 and duration_s > 0 else None


def _time_steps(step: Callable[[], Any], args: argparse.Namespace, steps: int) -> _Timed:
    # Graphs run while building the step (variable initializers) are not the step's.
    graphi = args.executor == "GRAPHI"
    timed = _Timed(times=[], built=_graph_steps() if graphi else {}, first={}, at_timing_start={})

    def after_step(phase: str, done: int, total: int) -> None:
        if graphi and not timed.first:  # the setting of the first step
            timed.first.update(_graphi_setting(timed.built))

    def before_timing() -> None:
        if graphi:
            timed.at_timing_start.update(_graphi_setting(timed.built))

    def settle_autotune() -> None:
        # Online autotuning explores during a graph's first steps (tens of steps for a
        # 1 s step); timing those would measure the exploration, not what it settled on.
        timed.settle = {"max_steps": args.settle_autotune, "steps": 0, "seconds": 0.0, "state": None}
        t0 = time.perf_counter()
        while timed.settle["steps"] < args.settle_autotune:
            state = (_graphi_setting(timed.built).get("autotune") or {}).get("state")
            timed.settle["state"] = state
            if state not in ("waiting", "exploring"):
                break
            step()
            timed.settle["steps"] += 1
        timed.settle["seconds"] = time.perf_counter() - t0 if timed.settle["steps"] else 0.0

    def before_timing_settled() -> None:
        if graphi and args.settle_autotune > 0:
            settle_autotune()
        before_timing()

    timed.times = stepstats.time_steps(step, steps, untimed=args.warmup, on_step=after_step,
                                       before_timing=before_timing_settled)
    return timed


def _traced_steps(step: Any, trace_steps: int) -> Dict[str, Any]:
    """W and CP of ``trace_steps`` FULL_TRACE steps (``graphi_tf.lab.bound``) on the usable cores."""
    from graphi_tf.lab import bound

    cores = ab.usable_cores()
    works, cps, nodes = [], [], None
    for _ in range(trace_steps):
        b = bound.lower_bound(step.run_traced(), cores)
        works.append(b["work_ms"])
        cps.append(b["critical_path_ms"])
        nodes = b["nodes"]
    return {"traced_work_ms": works, "critical_path_ms": cps, "cores": cores, "nodes": nodes}


def _check_graphi_arm(args: argparse.Namespace, timed: _Timed, result: Dict[str, Any]) -> None:
    """Records what GRAPHI had in force; fails the arm if no GRAPHI graph ran or its setting
    did not come from ``--expect-source``."""
    setting = _graphi_setting(timed.built)
    first = timed.first
    setting["first_step"] = {k: first.get(k) for k in ("executors", "threads_per_executor", "source")}
    if "autotune" in timed.at_timing_start:
        setting["autotune_at_timing_start"] = timed.at_timing_start["autotune"]
    result["setting"] = setting
    result["autotune"] = setting.get("autotune")
    if timed.settle is not None:
        result["autotune_settle"] = timed.settle
    if "signature" not in setting:
        result["ok"] = False
        result["error"] = "the step ran no graph on the GRAPHI executor"
    elif args.expect_source and first.get("source") != args.expect_source:
        result["ok"] = False
        result["error"] = (f"GRAPHI ran the main graph {setting['signature']} with a setting from "
                           f"{first.get('source')!r} at its first step, not from {args.expect_source!r}")


def _check_stock_arm(tf: Any, args: argparse.Namespace, result: Dict[str, Any]) -> None:
    """Records the stock setting and the proof that GRAPHI did nothing; fails the arm otherwise."""
    result["setting"] = _stock_setting(tf, args.executor, args.inter, args.intra)
    proof = _proof()
    result["proof"] = proof
    if not proof["graphi_did_nothing"]:
        result["ok"] = False
        result["error"] = (f"GRAPHI was active in a {args.executor} arm: threads "
                           f"{proof['graphi_threads']}, {proof['graphi_graphs_run']} GRAPHI graph(s) ran "
                           "(does the step name an executor_type itself?)")


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # Everything the step prints goes to stderr; stdout carries only the JSON line.
    sys.stdout.flush()
    json_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def emit(message: Dict[str, Any]) -> None:
        json_out.write(json.dumps(message) + "\n")
        json_out.flush()

    try:
        result = _run(args, emit)
    except Exception as e:  # noqa: BLE001  (reported to the orchestrator, which goes on)
        traceback.print_exc()
        result = {"role": args.role, "ok": False, "error": f"{type(e).__name__}: {e}"}
        if isinstance(e, CaseError):
            result["usage_error"] = str(e)
    json_out.write(json.dumps(result) + "\n")
    json_out.flush()
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
