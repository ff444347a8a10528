"""``graphi-tf ab``: stock TensorFlow vs GRAPHI on one step, each arm in its own process.

The arms and what each runs are the table ``graphi_tf.lab.arms.ARMS`` (listed under --help):
stock_default, the stock_best sweep of DEFAULT's (inter_op, intra_op), single_threaded,
graphi_auto (GRAPHI as an unchanged model gets it: a new empty cache per process, no
GRAPHI_* variables; the headline), graphi_untuned (GRAPHI's fixed default layout,
GRAPHI_AUTOTUNE=0) and graphi_tuned (started from a setting ``graphi_tf.tune`` cached in a
tuning run before the rounds; the arm fails unless GRAPHI reports (info() graphs[].source)
that the main graph started from "cache").

``--graphi-env NAME:VAR=VALUE[,VAR=VALUE...]`` (repeatable) adds a GRAPHI arm NAME that runs
like graphi_untuned with those environment variables on top, e.g. one of GRAPHI's knobs
(``--graphi-env no_wc:GRAPHI_STEAL_THRESHOLD_NS=off``); the report also compares it with
graphi_untuned.

Every arm runs in a fresh Python process (TensorFlow fixes its thread pools per process),
the arms interleaved over ``--repeats`` rounds with the starting arm rotated each round,
each with ``--warmup`` untimed and ``--steps`` timed steps. graphi_auto keeps warming up
(at most ``--settle-autotune`` more untimed steps) while GRAPHI's online autotuning is still
exploring, so its timed steps show what an unchanged model runs at once tuned; what the
exploration cost is reported beside it. One more "reference" process
(DEFAULT, inter=1 intra=1, a few FULL_TRACE steps) measures the physical limit
LB = max(CP, W / cores). A failed process (non-zero exit, timeout, bad JSON) marks its arm
failed with the tail of its stderr (the only worker output shown); the other arms still
run. This process runs nothing on TensorFlow (it imports it only because importing
graphi_tf does, with TensorFlow's INFO lines off: graphi_tf._cli_logging). Statistics and
the output schema: ``graphi_tf.lab.report``. Outputs: ab.json, ab.md, ab.png in ``--out-dir``
and the table on stdout, the headline (the lead GRAPHI arm against stock default and stock
best) first.

Client mode, ``--clients N[,N...]`` (docs/serving.md): every arm process, after its timed
steps, serves N concurrent closed-loop clients for ``--duration`` seconds for each N in turn
(``graphi_tf.lab.clients``); the report gains a "clients" section (throughput and p50/p90/p99
latency per arm and N, per-round ratios against stock default, inter=1 intra=1 and the
stock best at that N) and ab_clients.png (latency and throughput against N). Its default
arms are graphi_tf.lab.arms.CLIENT_ARMS.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from graphi_tf.lab import arms as _arms
from graphi_tf.lab import cli_common
from graphi_tf import decision as _decision
from graphi_tf.lab import report as _report
from graphi_tf.lab import clients as _clients
from graphi_tf.lab import lockstep as _lockstep
from graphi_tf import stepstats
from graphi_tf._argtypes import int_at_least as _int_at_least
from graphi_tf.lab.cli_common import Case
from graphi_tf.tune import DEFAULT_ROUNDS as TUNE_ROUNDS
from graphi_tf.tune import DEFAULT_STEPS as TUNE_STEPS
from graphi_tf.tune import DEFAULT_WARMUP as TUNE_WARMUP
from graphi_tf.lab.models import MODELS, MODES, SIZES  # noqa: F401  (tools/ab_all.py reads them here)

DEFAULT_WARMUP = 100
"""Untimed steps per arm process (``--warmup``)."""
DEFAULT_STEPS = 50
"""Timed steps per arm process (``--steps``)."""
DEFAULT_REPEATS = 5
"""Rounds over all arms (``--repeats``)."""
DEFAULT_TRACE_STEPS = 5
"""FULL_TRACE steps of the reference process (``--trace-steps``)."""
DEFAULT_TIMEOUT_S = 1800.0
"""Seconds before one process is killed (``--timeout``)."""
DEFAULT_SETTLE_AUTOTUNE = 20000  # a bound: it stops as soon as the autotuner decided
"""graphi_auto's most extra untimed steps while online autotuning explores (``--settle-autotune``)."""
REFERENCE_MAX_WARMUP = 20
"""The reference process warms up ``min(--warmup, this)`` steps: it only has to reach steady
op times for its traced steps."""
STDERR_TAIL_LINES = 25


@dataclasses.dataclass(frozen=True)
class Arm:
    """One arm as it runs: its process's executor, pools, cache and environment."""

    name: str
    executor: str
    inter_op: Optional[int] = None
    intra_op: Optional[int] = None
    sweep: bool = False
    cache: str = "empty"  # graphi_tf.lab.arms.CACHES: "empty" a new empty dir per process, "tuned"
    env: Tuple[Tuple[str, str], ...] = ()  # the variables its processes get (graphi_tf.lab.arms)

    @property
    def description(self) -> str:
        return _arms.describe(self.name, dict(self.env))


def usable_cores() -> int:
    """The cores GRAPHI's native topology counts usable here (``graphi_tf.info()["usable_cores"]``:
    this process's CPU affinity capped by its cgroup CPU quota). There is nothing to fall back
    on: graphi_tf is not importable without its native library."""
    import graphi_tf

    return int(graphi_tf.info()["usable_cores"])


def sweep_values(cores: int) -> List[int]:
    """Powers of two up to ``cores``: 1, 2, 4, ..."""
    values, v = [], 1
    while v <= cores:
        values.append(v)
        v *= 2
    return values


def parse_env_arm(text: str) -> Arm:
    """The GRAPHI arm of a ``--graphi-env NAME:VAR=VALUE[,VAR=VALUE...]`` value.

    Raises ValueError saying what is wrong and what is allowed.
    """
    name, sep, assignments = text.partition(":")
    if not sep or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"invalid --graphi-env {text!r}; allowed: NAME:VAR=VALUE[,VAR=VALUE...] with "
                         "NAME of lower-case letters, digits and _, e.g. no_wc:GRAPHI_STEAL_THRESHOLD_NS=off")
    if name in _arms.ARM_NAMES or _arms.parse_sweep_arm(name) is not None:
        raise ValueError(f"invalid --graphi-env name {name!r}: it is a built-in arm; choose another name")
    env = []
    for item in filter(None, (part.strip() for part in assignments.split(","))):
        var, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
            raise ValueError(f"invalid --graphi-env assignment {item!r} in {text!r}; allowed: VAR=VALUE")
        env.append((var, value))
    if not env:
        raise ValueError(f"invalid --graphi-env {text!r}: no VAR=VALUE given")
    return Arm(name, "GRAPHI", env=tuple(_arms.custom_env(dict(env)).items()))


def resolve_arms(selected: Sequence[str], sweep: Sequence[int],
                 env_arms: Sequence[Arm] = ()) -> List[Arm]:
    """Arms for ``--arms`` names (of graphi_tf.lab.arms.ARMS, or sweep points like stock_i2_a1),
    followed by the ``--graphi-env`` arms.

    Raises ValueError naming the unknown name and the allowed ones.
    """
    sweep_names = [_arms.sweep_arm_name(i, a) for i in sweep for a in sweep]
    arms: List[Arm] = []

    def add(arm: Arm) -> None:
        if arm.name not in [a.name for a in arms]:
            arms.append(arm)

    for name in selected:
        spec = _arms.spec(name)
        point = _arms.parse_sweep_arm(name)
        if spec is not None and spec.sweep:
            for i in sweep:
                for a in sweep:
                    add(Arm(_arms.sweep_arm_name(i, a), spec.executor, i, a, sweep=True))
        elif spec is not None:
            add(Arm(name, spec.executor, cache=spec.cache, env=spec.env))
        elif point is not None:
            add(Arm(name, "DEFAULT", point[0], point[1], sweep=True))
        else:
            raise ValueError(f"unknown arm {name!r}; allowed: {', '.join(_arms.ARM_NAMES)} "
                             f"or a sweep point such as {', '.join(sweep_names)}")
    for arm in env_arms:
        if arm.name in [a.name for a in arms]:
            raise ValueError(f"--graphi-env arm {arm.name!r} is given twice")
        arms.append(arm)
    if not arms:
        raise ValueError(f"no arms selected; allowed: {', '.join(_arms.ARM_NAMES)}")
    return arms


# ------------------------------------------------------------------------ arguments


def _arm_list(text: str) -> List[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    try:
        resolve_arms(names, [1, 2])
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return names


def _env_arm(text: str) -> Arm:
    try:
        return parse_env_arm(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def client_list(text: str) -> List[int]:
    """The ``--clients N[,N...]`` values: distinct whole numbers >= 1, in the order given.
    Raises argparse.ArgumentTypeError naming the value and what is allowed."""
    values = _int_list(text)
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: a client count is given twice; "
                                         "allowed: distinct whole numbers >= 1, e.g. 1,4,8")
    return values


def default_arms(clients: Optional[Sequence[int]] = None) -> List[str]:
    """The arms run when ``--arms`` is not given: every arm of graphi_tf.lab.arms.ARMS, or with
    ``--clients`` graphi_tf.lab.arms.CLIENT_ARMS (stock default, inter=1 intra=1, the sweep, GRAPHI)."""
    return list(_arms.CLIENT_ARMS if clients else _arms.ARM_NAMES)


def _int_list(text: str) -> List[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: whole numbers >= 1, e.g. 1,2,4")
    return values


def _add_case_options(parser: argparse.ArgumentParser) -> None:
    """The case arguments, --out-dir, --warmup, --steps and client mode's --clients, --duration."""
    cli_common.add_case_arguments(
        parser, script_note="; the worker applies each arm to it (see graphi_tf.lab._ab_worker)")
    parser.add_argument("--out-dir", default=None,
                        help="where ab.json, ab.md, ab.png go (default ./ab_results/<model>_<size>_<mode>, "
                             "./ab_results/<script stem>, ./ab_results/<SavedModel dir>_<loader> or "
                             "./ab_results/<keras file stem>_infer|_train)")
    parser.add_argument("--warmup", type=_int_at_least(0), default=DEFAULT_WARMUP,
                        help=f"untimed steps per arm process (default {DEFAULT_WARMUP})")
    parser.add_argument("--steps", type=_int_at_least(1), default=DEFAULT_STEPS,
                        help=f"timed steps per arm process (default {DEFAULT_STEPS})")
    parser.add_argument("--clients", type=client_list, default=None, metavar="N,N,...",
                        help="client mode (docs/serving.md): after its timed steps every arm process serves "
                             "N concurrent closed-loop clients for --duration seconds, for each N; reports "
                             "throughput and p50/p90/p99 latency per arm and N (default arms: "
                             f"{','.join(_arms.CLIENT_ARMS)})")
    parser.add_argument("--duration", type=_positive_float, default=_clients.DEFAULT_DURATION_S,
                        metavar="SECONDS",
                        help=f"--clients: seconds of each client phase (default {_clients.DEFAULT_DURATION_S:g})")
    parser.add_argument("--lockstep", type=_int_at_least(1), default=None, metavar="CYCLES",
                        help="time the arms in lockstep (graphi_tf.lab.lockstep): each round starts every arm's "
                             "process and warms each up alone, then runs CYCLES cycles in which every arm in turn "
                             "times --steps steps while the others wait; each phase is a round of the report, so "
                             "drift over seconds on a shared machine cancels out of the ratios; with --clients, "
                             "each cycle goes on with one --duration serving phase per N, every arm in turn")


def add_arguments(parser: argparse.ArgumentParser, *, case: bool = True) -> None:
    """The ``graphi-tf ab`` options (``case=False``: without the case arguments, --out-dir,
    --warmup, --steps, --clients and --duration, and with --arms defaulting to every arm;
    with them --arms defaults to None, which ``run`` resolves with ``default_arms``)."""
    if case:
        _add_case_options(parser)
    parser.add_argument("--repeats", type=_int_at_least(1), default=DEFAULT_REPEATS,
                        help=f"rounds over all arms, starting arm rotated each round (default {DEFAULT_REPEATS})")
    parser.add_argument("--arms", type=_arm_list, default=None if case else list(_arms.ARM_NAMES),
                        help=f"comma-separated subset of {','.join(_arms.ARM_NAMES)} or sweep points like "
                             f"{_arms.sweep_arm_name(2, 1)} (default: all; with --clients "
                             f"{','.join(_arms.CLIENT_ARMS)})")
    parser.add_argument("--graphi-env", type=_env_arm, action="append", default=[],
                        metavar="NAME:VAR=VALUE,...",
                        help=f"an extra GRAPHI arm NAME run like {_arms.GRAPHI_UNTUNED} with these environment "
                             f"variables on top, compared with {_arms.GRAPHI_UNTUNED} (repeatable), e.g. "
                             "no_wc:GRAPHI_STEAL_THRESHOLD_NS=off")
    parser.add_argument("--sweep", type=_int_list, default=None, metavar="N,N,...",
                        help=f"inter_op/intra_op values of the {_arms.STOCK_BEST} sweep (default: powers of two "
                             "up to the usable cores)")
    parser.add_argument("--tune-warmup", type=_int_at_least(0), default=TUNE_WARMUP,
                        help=f"{_arms.GRAPHI_TUNED}: untimed steps on each setting's first visit in the tuning "
                             f"run (default {TUNE_WARMUP})")
    parser.add_argument("--tune-steps", type=_int_at_least(1), default=TUNE_STEPS,
                        help=f"{_arms.GRAPHI_TUNED}: timed steps per visit ({TUNE_ROUNDS} rounds) in "
                             f"the tuning run (default {TUNE_STEPS})")
    parser.add_argument("--trace-steps", type=_int_at_least(0), default=DEFAULT_TRACE_STEPS,
                        help="FULL_TRACE steps of the reference process; 0 skips the physical limit "
                             f"(default {DEFAULT_TRACE_STEPS})")
    parser.add_argument("--settle-autotune", type=_int_at_least(0), default=DEFAULT_SETTLE_AUTOTUNE,
                        metavar="MAX",
                        help=f"{_arms.GRAPHI_AUTO}: after the warm-up, at most MAX more untimed steps while "
                             "GRAPHI's online autotuning still explores, so the timed steps show what it settled "
                             "on (its cost is reported apart); 0 times the exploration too "
                             f"(default {DEFAULT_SETTLE_AUTOTUNE})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds before one process is killed and its arm counted failed "
                             f"(default {DEFAULT_TIMEOUT_S:.0f})")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the arm processes")
    parser.add_argument("--seed", type=int, default=0,
                        help="--model, --saved-model, --keras-model: seeds the model and its inputs (default 0)")
    parser.add_argument("--no-png", action="store_true", help="do not write ab.png")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: a number of seconds > 0")
    return value


def _epilog() -> str:
    return _arms.help_text() + "\n\n" + __doc__.split("\n\n", 2)[2]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``ab`` subcommand to ``graphi-tf``'s subparsers."""
    parser = cli_common.add_subcommand(
        subparsers, "ab", run, help="A/B: stock TensorFlow vs GRAPHI on one step, each arm in its own process",
        description=__doc__.split("\n\n")[0], epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


# ------------------------------------------------------------------------ running


def _tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    return "\n".join((text or "").rstrip().splitlines()[-lines:])


def worker_env() -> Dict[str, str]:
    """The environment of a worker process: this one's, less every GRAPHI_* variable, with
    TensorFlow's INFO lines off and this graphi_tf first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # `python -m` puts the working directory first on sys.path: run from a source checkout
    # after `pip install .`, the worker would import the checkout's graphi_tf/, which has no
    # built library. PYTHONSAFEPATH (Python >= 3.11) leaves the working directory out.
    env["PYTHONSAFEPATH"] = "1"
    # The worker must import this same graphi_tf.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(_report.__file__))))
    parts = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def worker_command(python: str, argv: Sequence[str]) -> List[str]:
    """The command line of a worker process with options ``argv``."""
    return [python, "-m", "graphi_tf.lab._ab_worker", *argv]


def run_process(python: str, argv: List[str], env: Dict[str, str], timeout: float) -> Dict[str, Any]:
    """Runs one worker; returns {"ok", "result", "error", "stderr_tail", "wall_s", "argv"}."""
    cmd = worker_command(python, argv)
    rec: Dict[str, Any] = {"argv": cmd, "ok": False, "result": None, "error": None, "stderr_tail": None}
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        rec["wall_s"] = time.monotonic() - start
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        rec.update(error=f"timed out after {timeout:.0f} s", stderr_tail=_tail(stderr))
        return rec
    rec["wall_s"] = time.monotonic() - start
    result = None
    lines = [x for x in proc.stdout.strip().splitlines() if x.strip()]
    if lines:
        try:
            result = json.loads(lines[-1])
        except ValueError:
            result = None
    if not isinstance(result, dict):
        rec.update(error=f"exit status {proc.returncode}, no JSON result on stdout",
                   stderr_tail=_tail(proc.stderr))
        return rec
    rec["result"] = result
    if proc.returncode != 0 or not result.get("ok"):
        rec.update(error=result.get("error") or f"exit status {proc.returncode}", stderr_tail=_tail(proc.stderr))
        return rec
    rec["ok"] = True
    return rec


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class _Runner:
    """How this A/B run starts its worker processes."""

    python: str
    base_env: Dict[str, str]
    case_argv: List[str]  # the case's options (``Case.to_argv``)
    timeout: float
    tuned_cache: str  # graphi_tuned's cache, written by the tuning run
    client_argv: List[str] = dataclasses.field(default_factory=list)  # an arm's --clients/--duration

    def run(self, role: str, executor: str, argv: Sequence[str], env: Dict[str, str]) -> Dict[str, Any]:
        return run_process(self.python, ["--role", role, "--executor", executor, *self.case_argv, *argv],
                           dict(self.base_env, **env), self.timeout)

    def command(self, role: str, executor: str, argv: Sequence[str]) -> List[str]:
        """The command line of a worker (``run_process`` runs the same)."""
        return worker_command(self.python, ["--role", role, "--executor", executor, *self.case_argv, *argv])

    def run_with_empty_cache(self, role: str, executor: str, argv: Sequence[str],
                             env: Dict[str, str]) -> Tuple[Dict[str, Any], Dict[str, str]]:
        """Runs with a new empty GRAPHI_CACHE_DIR for this process alone: nothing an earlier
        process cached (graphi_auto's online tuning caches what it adopts) reaches it.
        Returns the record and the GRAPHI_* variables it ran with."""
        with tempfile.TemporaryDirectory(prefix="graphi_ab_empty_cache_") as empty:
            env = dict(env, GRAPHI_CACHE_DIR=empty)
            return self.run(role, executor, argv, env), env


def run_ab(case: Case, out_dir: str, *, arms: Sequence[str] = _arms.ARM_NAMES, warmup: int = DEFAULT_WARMUP,
           steps: int = DEFAULT_STEPS, repeats: int = DEFAULT_REPEATS, sweep: Optional[Sequence[int]] = None,
           tune_warmup: int = TUNE_WARMUP, tune_steps: int = TUNE_STEPS,
           trace_steps: int = DEFAULT_TRACE_STEPS, settle_autotune: int = DEFAULT_SETTLE_AUTOTUNE,
           timeout: float = DEFAULT_TIMEOUT_S,
           python: str = sys.executable, png: bool = True, extra_settings: Optional[Dict[str, Any]] = None,
           env_arms: Sequence[Arm] = (), clients: Optional[Sequence[int]] = None,
           duration: float = _clients.DEFAULT_DURATION_S, lockstep: Optional[int] = None) -> Dict[str, Any]:
    """Runs the A/B comparison and writes ab.json, ab.md (and ab.png) into ``out_dir``.

    The stages: the case check (``check_case``; nothing is written before it passes), the
    tuning run (if an arm starts from the tuned cache), ``repeats`` rounds over the arms, the
    reference run (``trace_steps`` > 0 and the case has a traceable reference:
    ``Case.reference_case``), then ``graphi_tf.lab.report``. Returns the report document
    (``graphi_tf.lab.report`` schema; with ``clients``, every arm process also serves each
    number of concurrent clients for ``duration`` seconds, and the document gains the
    "clients" section of ``graphi_tf.lab.clients.client_report``; with ``lockstep``, every round
    is one set of processes timed in ``lockstep`` cycles of phases, each cycle (its step phase
    and, with ``clients``, its serving phases) a round of the report: ``graphi_tf.lab.lockstep``).
    Raises ValueError for an unknown arm name, cli_common.UsageError for a bad case and
    CaseCheckError when its check process fails.
    """
    cores = usable_cores()
    sweep = list(sweep) if sweep else sweep_values(cores)
    arm_list = resolve_arms(arms, sweep, env_arms)
    client_argv = ["--clients", ",".join(map(str, clients)), "--duration", str(duration)] if clients else []
    runner = _Runner(python, worker_env(), case.to_argv(), timeout, os.path.join(out_dir, "graphi_cache"),
                     client_argv)
    check_case(case, runner)
    os.makedirs(out_dir, exist_ok=True)
    settings = {"warmup": warmup, "steps": steps, "repeats": repeats,
                "arms": list(arms) + [a.name for a in env_arms],
                "sweep": sweep, "tune_warmup": tune_warmup, "tune_steps": tune_steps,
                "trace_steps": trace_steps, "settle_autotune": settle_autotune, "timeout_s": timeout,
                "python": python, "clients": list(clients or []), "duration_s": duration if clients else None,
                "lockstep_cycles": lockstep, **(extra_settings or {})}
    raw = _raw_document(case, cores, arm_list, settings)
    tune_error = None
    if any(a.cache == "tuned" for a in arm_list):
        raw["tune"] = _tuning_run(runner, tune_warmup, tune_steps)
        tune_error = None if raw["tune"]["ok"] else f"the tuning run failed: {raw['tune']['error']}"
    for r in range(repeats):
        shift = r % len(arm_list)
        order = arm_list[shift:] + arm_list[:shift]
        if lockstep:
            _lockstep_round(runner, raw, order, r, lockstep, warmup, steps, tune_error, settle_autotune,
                            clients or (), duration)
            continue
        raw["order"].append([a.name for a in order])
        for arm in order:
            record = _arm_round(runner, arm, r, warmup, steps, tune_error, raw["tune"], settle_autotune)
            raw["arms"][arm.name]["rounds"].append(record)
            _log(f"[round {r + 1}/{repeats}] {arm.name}: {_round_status(record)}")
    if trace_steps > 0:
        reference, why = case.reference_case()
        raw["bound"] = (_measure_bound(runner, min(warmup, REFERENCE_MAX_WARMUP), steps, trace_steps, cores)
                        if reference is not None else {"skipped": why})
    doc = _report.build_report(raw)
    if clients:
        doc["clients"] = _clients.client_report(doc)
    write_outputs(doc, out_dir, png=png)
    return doc


class CaseCheckError(RuntimeError):
    """The process that checks a case by building its step failed for a reason that is not
    the case's options (a crash, a timeout)."""


def check_case(case: Case, runner: "_Runner") -> None:
    """Checks the case before any arm starts or anything is written: its options and files
    here (``cli_common.check_case``) and, for a ``.keras`` file, whose custom objects and
    compiled state only loading it can show, by building its step once in a "check" worker
    (this process runs nothing on TensorFlow). Raises cli_common.UsageError naming what is
    wrong, or CaseCheckError."""
    cli_common.check_case(case)
    if case.kind != "keras":
        return
    rec = runner.run("check", "DEFAULT", [], {})
    result = rec["result"] or {}
    if rec["ok"]:
        return
    if result.get("usage_error"):
        raise cli_common.UsageError(result["usage_error"])
    raise CaseCheckError(f"checking {case.name} failed: {rec['error']}\n{rec['stderr_tail'] or ''}".rstrip())


def _raw_document(case: Case, cores: int, arm_list: Sequence[Arm], settings: Dict[str, Any]) -> Dict[str, Any]:
    """The raw measurements (``graphi_tf.lab.report.build_report``'s input) before anything ran."""
    return {
        "created_unix": time.time(),
        "case": case.to_dict(),
        "settings": settings,
        "machine": {"usable_cores": cores, "cpus": len(os.sched_getaffinity(0)),
                    "hostname": os.uname().nodename, "cpu_model": cpu_model()},
        "order": [],
        "tune": None,
        "bound": None,
        "arms": {a.name: {"description": a.description, "executor": a.executor, "inter_op": a.inter_op,
                          "intra_op": a.intra_op, "sweep": a.sweep, "env": dict(a.env), "rounds": []}
                 for a in arm_list},
    }


def _tuning_run(runner: _Runner, tune_warmup: int, tune_steps: int) -> Dict[str, Any]:
    """``graphi_tf.tune`` in a worker, caching its outcome in a new ``runner.tuned_cache``."""
    shutil.rmtree(runner.tuned_cache, ignore_errors=True)
    os.makedirs(runner.tuned_cache)
    rec = runner.run("tune", "GRAPHI", ["--warmup", str(tune_warmup), "--steps", str(tune_steps)],
                     {"GRAPHI_CACHE_DIR": runner.tuned_cache})
    result = rec["result"] or {}
    if rec["ok"]:
        best = (result.get("tune") or {}).get("best")
        what = f"best {best[0]}x{best[1]}" if isinstance(best, (list, tuple)) and len(best) == 2 else "done"
        _log(f"[tune] {what}, cached in {runner.tuned_cache} ({rec['wall_s']:.1f} s)")
    else:
        _log(f"[tune] FAILED: {rec['error']}")
    return {"ok": rec["ok"], "cache_dir": runner.tuned_cache, "wall_s": rec.get("wall_s"),
            "error": rec["error"], "stderr_tail": rec["stderr_tail"], "result": result.get("tune"),
            "cache_entries": result.get("cache_entries_at_end")}


def _arm_argv(runner: _Runner, arm: Arm, warmup: int, steps: int, settle_autotune: int) -> List[str]:
    """The worker options of one process of ``arm`` (role arm), but its cache's."""
    argv = ["--warmup", str(warmup), "--steps", str(steps), *runner.client_argv]
    if arm.name == _arms.GRAPHI_AUTO and settle_autotune > 0:
        argv += ["--settle-autotune", str(settle_autotune)]
    if arm.inter_op is not None:
        argv += ["--inter", str(arm.inter_op)]
    if arm.intra_op is not None:
        argv += ["--intra", str(arm.intra_op)]
    if arm.cache == "tuned":
        argv += ["--expect-source", "cache"]
    return argv


def _arm_round(runner: _Runner, arm: Arm, r: int, warmup: int, steps: int, tune_error: Optional[str],
               tune: Optional[Dict[str, Any]], settle_autotune: int = 0) -> Dict[str, Any]:
    """One process of ``arm`` in round ``r``; returns its round record."""
    record: Dict[str, Any] = {"round": r}
    if arm.cache == "tuned" and tune_error:
        record.update(ok=False, error=tune_error, stderr_tail=(tune or {}).get("stderr_tail"))
        return record
    argv = _arm_argv(runner, arm, warmup, steps, settle_autotune)
    if arm.cache == "tuned":
        env = dict(arm.env, GRAPHI_CACHE_DIR=runner.tuned_cache)
        rec = runner.run("arm", arm.executor, argv, env)
    else:
        rec, env = runner.run_with_empty_cache("arm", arm.executor, argv, dict(arm.env))
    result = rec["result"] or {}
    record.update(_record_fields(rec, result, env))
    return record


def _lockstep_round(runner: _Runner, raw: Dict[str, Any], order: Sequence[Arm], r: int, cycles: int,
                    warmup: int, steps: int, tune_error: Optional[str], settle_autotune: int,
                    clients: Sequence[int] = (), duration: float = 0.0) -> None:
    """Round ``r`` in lockstep (graphi_tf.lab.lockstep): one process per arm, ``cycles`` cycles
    each; appends one round record per cycle to ``raw``'s arms (round r * cycles + cycle; the
    process's autotuning state on its first cycle's record only, so counts stay per process;
    with ``clients``, the cycle's serving phases in "clients", as a process of a round without
    lockstep reports its own)."""
    specs: List[_lockstep.ProcessSpec] = []
    envs: Dict[str, Dict[str, str]] = {}
    commands: Dict[str, List[str]] = {}
    skipped = {a.name for a in order if a.cache == "tuned" and tune_error}
    with contextlib.ExitStack() as stack:
        for arm in order:
            if arm.name in skipped:
                continue
            if arm.cache == "tuned":
                env = dict(arm.env, GRAPHI_CACHE_DIR=runner.tuned_cache)
            else:
                empty = stack.enter_context(tempfile.TemporaryDirectory(prefix="graphi_ab_empty_cache_"))
                env = dict(arm.env, GRAPHI_CACHE_DIR=empty)
            envs[arm.name] = env
            argv = [*_arm_argv(runner, arm, warmup, steps, settle_autotune), "--lockstep"]
            commands[arm.name] = runner.command("arm", arm.executor, argv)
            specs.append(_lockstep.ProcessSpec(arm.name, commands[arm.name], dict(runner.base_env, **env)))
        outcome = _lockstep.run_round(specs, cycles, steps, runner.timeout, clients=clients, duration_s=duration,
                                      log=lambda text: _log(f"[round {r + 1}] {text}"))
    names = [a.name for a in order]
    raw["order"].extend(_lockstep.cycle_order(names, c) for c in range(cycles))
    for arm in order:
        for c in range(cycles):
            record: Dict[str, Any] = {"round": r * cycles + c, "process_round": r, "cycle": c}
            if arm.name in skipped:
                record.update(ok=False, error=tune_error, stderr_tail=(raw.get("tune") or {}).get("stderr_tail"))
            else:
                got = outcome[arm.name]
                result = dict(got["result"] or {})
                times = got["phases"][c]
                served = got["client_phases"][c]
                ok = bool(result.get("ok")) and times is not None and (served is not None or not clients)
                rec = {"ok": ok, "wall_s": got["wall_s"], "error": got["error"] or (None if ok else "no phase"),
                       "stderr_tail": got["stderr_tail"], "argv": commands[arm.name]}
                result["step_times_ms"] = times
                if clients and served is not None:
                    settled = {p.get("clients"): p for p in result.get("clients_settle") or []}
                    result["clients"] = [dict(phase, warmup=settled.get(phase["clients"])) if c == 0 else phase
                                         for phase in served]
                if c > 0:  # one process: its autotuning counted once
                    result.update(autotune=None, autotune_settle=None)
                record.update(_record_fields(rec, result, envs[arm.name]))
                record["lockstep_ready_s"] = got["ready_s"]
            raw["arms"][arm.name]["rounds"].append(record)
        done = [rd for rd in raw["arms"][arm.name]["rounds"][-cycles:] if rd["ok"]]
        status = (f"{len(done)} phases, median {stepstats.median([stepstats.median(rd['step_times_ms']) for rd in done]):.3f} ms"
                  if done else f"FAILED ({raw['arms'][arm.name]['rounds'][-1]['error']})")
        _log(f"[round {r + 1}, lockstep] {arm.name}: {status}")


def _record_fields(rec: Dict[str, Any], result: Dict[str, Any], env: Dict[str, str]) -> Dict[str, Any]:
    """A round record's fields from a worker's run (``run_process``'s record) and result."""
    return dict(ok=rec["ok"], wall_s=rec.get("wall_s"), error=rec["error"],
                stderr_tail=rec["stderr_tail"], argv=rec["argv"],
                env={k: v for k, v in env.items() if k.startswith("GRAPHI_")},
                step_times_ms=result.get("step_times_ms") if rec["ok"] else None,
                examples_per_step=result.get("examples_per_step"),
                graph_nodes=result.get("graph_nodes"), setting=result.get("setting"),
                autotune=result.get("autotune"), proof=result.get("proof"),
                autotune_settle=result.get("autotune_settle"), cache_dir=result.get("cache_dir"),
                clients=result.get("clients") if rec["ok"] else None,
                cache_entries_at_start=result.get("cache_entries_at_start"),
                cache_entries_at_end=result.get("cache_entries_at_end"))


def _round_status(record: Dict[str, Any]) -> str:
    """The progress-log text of one round record."""
    if not record["ok"]:
        if "wall_s" not in record:  # never started: the tuning run it needs failed
            return f"FAILED ({record['error']})"
        return f"FAILED ({record['error']}) ({record['wall_s'] or 0:.1f} s)"
    status = f"median {stepstats.median(record['step_times_ms']):.3f} ms"
    autotune = record["autotune"]
    if isinstance(autotune, dict):
        chosen = autotune.get("chosen")
        status += (f", autotune {autotune.get('state')}"
                   + (f" {_decision.setting_label(tuple(chosen))}"
                      if isinstance(chosen, list) and len(chosen) in (2, 4) else ""))
    settle = record.get("autotune_settle")
    if isinstance(settle, dict) and settle.get("steps"):
        status += f" after {settle['steps']} more warm-up steps"
    return f"{status} ({record['wall_s'] or 0:.1f} s)"


def _reference_run(runner: _Runner, warmup: int, steps: int, trace_steps: int, intra: int) -> Dict[str, Any]:
    """One physical-limit process: DEFAULT, inter=1 (one op at a time), ``intra`` intra-op
    threads, ``trace_steps`` FULL_TRACE steps."""
    argv = ["--inter", "1", "--intra", str(intra), "--warmup", str(warmup), "--steps", str(steps),
            "--trace-steps", str(trace_steps)]
    rec, _ = runner.run_with_empty_cache("reference", "DEFAULT", argv, {})
    if rec["ok"]:
        _log(f"[reference inter=1 intra={intra}] ok ({rec['wall_s']:.1f} s)")
    else:
        _log(f"[reference inter=1 intra={intra}] FAILED ({rec['error']})")
    return rec


def _measure_bound(runner: _Runner, warmup: int, steps: int, trace_steps: int, cores: int) -> Dict[str, Any]:
    """The raw physical limit LB = max(CP, W / cores), from FULL_TRACE steps of DEFAULT runs
    with one op at a time (inter=1): W from intra=1 (each op's single-core work), CP from
    intra=cores (each op as fast as the whole machine runs it alone). A CP of single-core op
    times would overstate the limit of ops that run in parallel internally."""
    work = _reference_run(runner, warmup, steps, trace_steps, 1)
    if not work["ok"]:
        return {"error": work["error"], "stderr_tail": work["stderr_tail"]}
    res = work["result"]
    bound = {k: res.get(k) for k in ("traced_work_ms", "critical_path_ms", "cores", "untraced_step_ms",
                                      "nodes", "note")}
    bound["critical_path_intra"] = 1
    if cores > 1:
        path = _reference_run(runner, warmup, steps, trace_steps, cores)
        if not path["ok"]:
            return {"error": f"the critical-path reference (intra={cores}) failed: {path['error']}",
                    "stderr_tail": path["stderr_tail"]}
        cps = list(path["result"].get("critical_path_ms") or [])
        untraced = path["result"].get("untraced_step_ms")
        # Tracing inflates op times; the untraced step is an upper bound of its own path.
        bound.update(critical_path_1thread_ms=bound["critical_path_ms"], critical_path_intra=cores,
                     critical_path_ms=[min(c, untraced) if untraced else c for c in cps])
    return bound


def cpu_model() -> Optional[str]:
    """The processor, as a report names it: /proc/cpuinfo's model name and its widest vector
    units (e.g. "AMD EPYC (AVX2)", "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz (AVX-512, AMX)");
    None where /proc/cpuinfo is unreadable."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None
    name, flags = None, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and name is None:
            name = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    units = [label for flag, label in (("avx512f", "AVX-512"), ("amx_tile", "AMX")) if flag in flags]
    if not units and "avx2" in flags:
        units = ["AVX2"]
    return f"{name or 'unknown CPU'}" + (f" ({', '.join(units)})" if units else "")


def write_outputs(doc: Dict[str, Any], out_dir: str, *, png: bool = True) -> Dict[str, str]:
    """Writes ab.json and ab.md (and ab.png unless ``png`` is False or matplotlib is missing;
    with a "clients" section of several client counts also ab_clients.png)."""
    paths = {"json": os.path.join(out_dir, "ab.json"), "md": os.path.join(out_dir, "ab.md")}
    with open(paths["json"], "w") as f:
        f.write(_report.render_json(doc))
    with open(paths["md"], "w") as f:
        f.write(_report.render_markdown(doc))
    with open(paths["md"], "a") as f:
        f.write(_clients.render_markdown(doc))
    if png:
        try:
            paths["png"] = _report.render_png(doc, os.path.join(out_dir, "ab.png"))
            if len((doc.get("clients") or {}).get("values") or []) > 1:
                paths["clients_png"] = _clients.render_png(doc, os.path.join(out_dir, "ab_clients.png"))
        except _report.ReportError as e:
            _log(f"graphi-tf ab: no chart: {e}")
    return paths


def default_out_dir(case: Case) -> str:
    return os.path.join("ab_results", case.name)


def run(args: argparse.Namespace) -> int:
    """Handler of ``graphi-tf ab``: runs the comparison, prints the table, writes the files."""
    try:
        case = Case.from_args(args)
        out_dir = args.out_dir or default_out_dir(case)
        doc = run_ab(case, out_dir, arms=args.arms or default_arms(args.clients), warmup=args.warmup,
                     steps=args.steps, clients=args.clients, duration=args.duration,
                     repeats=args.repeats, sweep=args.sweep, tune_warmup=args.tune_warmup,
                     tune_steps=args.tune_steps, trace_steps=args.trace_steps,
                     settle_autotune=args.settle_autotune, timeout=args.timeout,
                     python=args.python, png=not args.no_png, env_arms=args.graphi_env,
                     lockstep=args.lockstep)
    except (cli_common.UsageError, ValueError) as e:
        return cli_common.error(str(e))
    except CaseCheckError as e:
        return cli_common.error(str(e), 1)
    print(_report.render_terminal(doc))
    if doc.get("clients"):
        print("\n" + _clients.render_terminal(doc))
    charts = "" if args.no_png else ", ab.png" + (", ab_clients.png" if len(args.clients or []) > 1 else "")
    print(f"wrote {os.path.join(out_dir, 'ab.json')}, ab.md" + charts)
    return 0 if any(a["status"] != "failed" for a in doc["arms"].values()) else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m graphi_tf.lab.ab`` / tools/ab.py: the same as ``graphi-tf ab``."""
    parser = argparse.ArgumentParser(prog=f"{cli_common.PROG} ab", description=__doc__.split("\n\n")[0],
                                     epilog=_epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
