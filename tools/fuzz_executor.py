#!/usr/bin/env python3
"""Random-graph differential fuzzer: GRAPHI against TensorFlow's stock executor.

A seed (and a mode) determines a *spec*: a JSON-able description of a random graph and
of the steps to run on it. Each spec is built afresh and run for several steps under
the DEFAULT executor and under GRAPHI in every team layout this machine allows
(re-partitioned in-process with ``graphi_tf.configure``). The results of every step must
be equal with the conformance suite's tolerance rule (floats allclose with
rtol=1e-5, atol=1e-6, everything else exact); a step that fails must fail with the
same error class under both.

What a graph can contain:

* element-wise ops, matmul, concat, split, add_n and reductions over [D, D] float32;
* graph mode: v1 ``cond`` and ``while_loop`` nested in each other; function mode:
  cond_v2/while_v2, with nested ``tf.function`` calls in their bodies;
* resource and (graph mode) ref variables, each updated by a read-assign-read chain
  whose order comes only from control dependencies;
* async kernels: a FIFO queue (enqueue then dequeue in the step) and, in some steps,
  a dequeue from an empty queue under a RunOptions timeout (DeadlineExceeded); a
  tf.data iterator with a parallel map;
* ``tf.py_function``;
* an assert that fails at one step (every stateful op waits for it, so a failing step
  changes no state and the next steps must work);
* per-step random feed subsets (inputs and intermediate tensors) and fetch subsets, and
  ``partial_run`` in two stages;
* for stateless graphs, the same steps from several threads at once.

Every run has a time limit; a run over it is a hang: the fuzzer prints the seed and every
thread's stack and exits with status 3. A failing seed can be shrunk (``--shrink``):
ops, steps and features are removed greedily while the failure persists, and the small
spec is printed with a command that replays it.

Usage::

    PYTHONPATH=. python3 tools/fuzz_executor.py --seeds 0:100 --mode both
    python3 tools/fuzz_executor.py --replay spec.json      # a spec printed by --shrink

Exit status: 0 no difference; 1 a difference; 3 a hang; 2 a usage error.
"""

import argparse
import copy
import faulthandler
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The fuzzer pins each layout itself; autotuning must not re-partition the teams
# behind it, and its cache entries must not leak into the user's cache.
os.environ.setdefault("GRAPHI_AUTOTUNE", "0")
if "GRAPHI_CACHE_DIR" not in os.environ:
    os.environ["GRAPHI_CACHE_DIR"] = tempfile.mkdtemp(prefix="graphi_fuzz_cache_")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.ops import control_flow_util  # noqa: E402

# The conformance suite's tolerance (tests/conftest.py FLOAT_RTOL / FLOAT_ATOL).
FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6

DIM = 4
MODES = ("graph", "function")
ALL_LAYOUTS = ((1, 1), (1, 2), (2, 1))

PURE_KINDS = ("add", "mul", "matmul", "tanh", "concat", "split", "add_n", "reduce")
CONTROL_KINDS = ("cond", "while", "call")
STATEFUL_KINDS = ("var", "queue", "dataset")
# Kinds whose output may be fed in graph mode (plain top-level tensors).
FEEDABLE_KINDS = ("add", "mul", "matmul", "tanh", "add_n")
ARITY = {"add": 2, "mul": 2, "matmul": 2, "tanh": 1, "concat": 2, "split": 1, "add_n": 3,
         "reduce": 2, "cond": 2, "while": 2, "call": 2, "py": 1, "var": 1, "queue": 1,
         "dataset": 1, "assert": 1}


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------

def _rng(seed: int, mode: str) -> random.Random:
    return random.Random(f"graphi-fuzz:{mode}:{seed}")


def _pick(rng: random.Random, count: int) -> int:
    """An index below ``count``, biased to recent values (depth) but reaching back (width)."""
    if rng.random() < 0.6:
        return count - 1 - rng.randrange(min(count, 6))
    return rng.randrange(count)


def _gen_program(rng: random.Random, mode: str, num_inputs: int, size: int, depth: int,
                 top: bool, kinds: Sequence[str]) -> List[dict]:
    nodes: List[dict] = []
    for _ in range(size):
        available = num_inputs + len(nodes)
        kind = rng.choice(kinds)
        if kind in ("cond", "while", "call") and depth >= 2:
            kind = "tanh"
        node: dict = {"op": kind, "in": [_pick(rng, available) for _ in range(ARITY[kind])]}
        if kind == "reduce":
            node["fn"] = rng.choice(("mean", "sum", "max"))
            node["axis"] = rng.choice((0, 1))
        elif kind in ("cond", "while", "call"):
            sub_kinds = PURE_KINDS + ("cond", "while") + (("call",) if mode == "function" else ())
            node["body"] = _gen_program(rng, mode, 2, rng.randint(1, 3), depth + 1, False, sub_kinds)
            if kind == "cond":
                node["else"] = _gen_program(rng, mode, 2, rng.randint(1, 3), depth + 1, False,
                                            sub_kinds)
            if kind == "while":
                node["iterations"] = rng.randint(0, 3)
        elif kind == "var":
            node["update"] = rng.choice(("assign", "assign_add"))
        nodes.append(node)
    return nodes


def generate(seed: int, mode: str) -> dict:
    """The spec of seed ``seed`` in ``mode`` ("graph" or "function"); deterministic per seed."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is invalid; allowed: {', '.join(MODES)}")
    rng = _rng(seed, mode)
    num_inputs = rng.randint(1, 3)
    kinds = list(PURE_KINDS) * 3 + ["cond", "while", "cond", "while"]
    if mode == "function" or rng.random() < 0.3:
        kinds += ["call"]
    features = {
        "variables": [rng.choice(("resource", "ref") if mode == "graph" else ("resource",))
                      for _ in range(rng.choice((0, 0, 1, 2)))],
        "queue": mode == "graph" and rng.random() < 0.3,
        "dataset": rng.random() < 0.3,
        "py": rng.random() < 0.25,
        "assert": rng.random() < 0.3,
    }
    if features["variables"]:
        kinds += ["var"] * 3
    if features["queue"]:
        kinds += ["queue"] * 2
    if features["dataset"]:
        kinds += ["dataset"] * 2
    if features["py"]:
        kinds += ["py"]
    if features["assert"]:
        kinds += ["assert"] * 2
    nodes = _gen_program(rng, mode, num_inputs, rng.randint(3, 14), 0, True, kinds)
    for node in nodes:  # variables referenced by index
        if node["op"] == "var":
            node["var"] = rng.randrange(len(features["variables"]))
    steps = rng.randint(2, 5)
    stateful = any(n["op"] in STATEFUL_KINDS for n in nodes)
    spec = {
        "seed": seed, "mode": mode, "inputs": num_inputs, "nodes": nodes,
        "variables": features["variables"],
        "assert_step": rng.randrange(steps) if features["assert"] else None,
        "optimize": rng.random() < 0.5,
        "threads": 0 if stateful or rng.random() < 0.6 else rng.randint(2, 3),
        "value_seed": rng.randrange(1 << 30),
        "outputs": [],
        "plans": [],
    }
    total = num_inputs + len(nodes)
    top = list(range(num_inputs, total))
    if mode == "function":
        spec["outputs"] = sorted(set([total - 1] + rng.sample(top, min(len(top), rng.randint(0, 3)))))
    for step in range(steps):
        plan = {"feed": sorted(rng.sample(range(num_inputs), rng.randint(0, num_inputs)))}
        if mode == "graph":
            plan["fetch"] = sorted(set(rng.sample(top, min(len(top), rng.randint(1, 4)))))
            feedable = [i for i in top if nodes[i - num_inputs]["op"] in FEEDABLE_KINDS
                        and i not in plan["fetch"]]
            plan["feed_nodes"] = sorted(rng.sample(feedable, min(len(feedable), rng.choice((0, 0, 1)))))
            plan["partial"] = rng.random() < 0.2 and step != spec["assert_step"] and not plan["feed_nodes"]
            plan["timeout"] = features["queue"] and rng.random() < 0.15
        spec["plans"].append(plan)
    return spec


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------

def _value(value_seed: int, salt: int, shape=(DIM, DIM)) -> np.ndarray:
    return np.random.RandomState((value_seed + 7919 * salt) % (1 << 31)).uniform(
        -1.0, 1.0, size=shape).astype(np.float32)


class _Builder:
    """Emits a spec's ops into the current graph (a tf.compat.v1 graph or a tf.function)."""

    def __init__(self, spec: dict, state: dict):
        self.spec = spec
        self.graph_mode = spec["mode"] == "graph"
        self.state = state          # variables, queue, iterator (made by the caller)
        self.gate: List = []        # the assert op every stateful op waits for
        self.step = None
        self.last: Dict[str, object] = {}  # per stateful resource: its last op (the chain)

    def _after(self, key: str):
        deps = list(self.gate)
        if key in self.last:
            deps.append(self.last[key])
        return tf.control_dependencies(deps)

    def program(self, nodes: List[dict], values: List, depth: int) -> List:
        values = list(values)
        for node in nodes:
            values.append(self.emit(node, values, depth))
        return values

    def emit(self, node: dict, values: List, depth: int):
        op = node["op"]
        a = [values[i] for i in node["in"]]
        if op == "add":
            return (a[0] + a[1]) * 0.5
        if op == "mul":
            return a[0] * a[1]
        if op == "matmul":
            return tf.matmul(a[0], a[1]) * (1.0 / DIM)
        if op == "tanh":
            return tf.tanh(a[0])
        if op == "concat":
            joined = tf.concat([a[0], a[1]], axis=1)
            return tf.reduce_max(tf.reshape(joined, [DIM, DIM, 2]), axis=2)
        if op == "split":
            left, right = tf.split(a[0], 2, axis=1)
            return tf.concat([right * 0.5, left], axis=1)
        if op == "add_n":
            return tf.add_n(a) * (1.0 / 3.0)
        if op == "reduce":
            fn = {"mean": tf.reduce_mean, "sum": tf.reduce_sum, "max": tf.reduce_max}[node["fn"]]
            reduced = fn(a[0], axis=node["axis"], keepdims=True)
            if node["fn"] == "sum":
                reduced = reduced * (1.0 / DIM)
            return (reduced + a[1]) * 0.5
        if op == "cond":
            pred = tf.reduce_sum(a[0]) > tf.reduce_sum(a[1]) * 0.5
            then_fn = lambda: self.program(node["body"], a, depth + 1)[-1]  # noqa: E731
            else_fn = lambda: self.program(node["else"], a, depth + 1)[-1]  # noqa: E731
            if self.graph_mode:
                return tf.compat.v1.cond(pred, then_fn, else_fn)
            return tf.cond(pred, then_fn, else_fn)
        if op == "while":
            captured = a[1]

            def body(i, x):
                return i + 1, tf.tanh(self.program(node["body"], [x, captured], depth + 1)[-1])

            loop = tf.compat.v1.while_loop if self.graph_mode else tf.while_loop
            return loop(lambda i, x: i < node["iterations"], body, [tf.constant(0), a[0]])[1]
        if op == "call":
            @tf.function
            def inner(x, y):
                return self.program(node["body"], [x, y], depth + 1)[-1]
            return inner(a[0], a[1])
        if op == "py":
            out = tf.py_function(lambda t: np.tanh(t.numpy() * 1.5), [a[0]], tf.float32)
            out.set_shape([DIM, DIM])
            return out
        if op == "assert":
            if self.gate:
                with tf.control_dependencies(self.gate):
                    return tf.identity(a[0])
            return tf.identity(a[0])
        if op == "var":
            index = node["var"] % max(1, len(self.state["variables"]))
            var = self.state["variables"][index]
            key = f"var{index}"
            with self._after(key):
                current = var.read_value()
            if node["update"] == "assign":
                update = var.assign(tf.tanh(current * 0.5 + a[0]), read_value=False)
            else:
                with tf.control_dependencies([current]):
                    update = var.assign_add(a[0] * 0.05, read_value=False)
            with tf.control_dependencies([update]):
                out = var.read_value()
            # A ref variable's read is an Identity that aliases the variable's buffer, which a
            # later assign_add changes in place; a copy, which the next update waits for, is
            # the value consumers may rely on (stock TensorFlow has the same race).
            out = out * 1.0
            self.last[key] = out.op if self.graph_mode else out
            return out
        if op == "queue":
            queue = self.state["queue"]
            with self._after("queue"):
                enqueue = queue.enqueue(a[0])
            with tf.control_dependencies([enqueue]):
                out = queue.dequeue()
            out.set_shape([DIM, DIM])
            self.last["queue"] = out.op
            return tf.tanh(out)
        if op == "dataset":
            iterator = self.state["iterator"]
            with self._after("dataset"):
                element = iterator.get_next() if self.graph_mode else next(iterator)
            self.last["dataset"] = element.op if self.graph_mode else element
            return (a[0] + element) * 0.5
        raise ValueError(f"unknown op kind {op!r}")


def _make_dataset(spec: dict):
    data = _value(spec["value_seed"], 999, shape=(5, DIM, DIM))
    return (tf.data.Dataset.from_tensor_slices(data)
            .map(lambda t: t * 0.5, num_parallel_calls=2).repeat().prefetch(2))


def _uses(spec: dict, kind: str) -> bool:
    return any(n["op"] == kind for n in spec["nodes"])


def _initial_variable(spec: dict, index: int) -> np.ndarray:
    return _value(spec["value_seed"], 500 + index)


def _unoptimized(config: tf.compat.v1.ConfigProto) -> None:
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    config.graph_options.optimizer_options.do_common_subexpression_elimination = False
    config.graph_options.optimizer_options.do_function_inlining = False


class GraphCase:
    """A spec built into a tf.compat.v1 graph (v1 control flow)."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.graph = tf.Graph()
        saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = False
        try:
            with self.graph.as_default():
                self._build()
        finally:
            control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved

    def _build(self) -> None:
        spec = self.spec
        self.inputs = [tf.compat.v1.placeholder_with_default(_value(spec["value_seed"], i), [DIM, DIM],
                                                             name=f"in{i}")
                       for i in range(spec["inputs"])]
        self.step = tf.compat.v1.placeholder_with_default(np.int32(-1), [], name="step")
        state = {"variables": [
            tf.compat.v1.Variable(_initial_variable(spec, i), use_resource=(kind == "resource"),
                                  name=f"var{i}") for i, kind in enumerate(spec["variables"])]}
        if _uses(spec, "queue") or any(p.get("timeout") for p in spec["plans"]):
            state["queue"] = tf.queue.FIFOQueue(4, tf.float32, shapes=[[DIM, DIM]], name="queue")
            self.empty_dequeue = tf.queue.FIFOQueue(1, tf.float32, shapes=[[]], name="empty").dequeue()
        initializers = []
        if _uses(spec, "dataset"):
            # Initialised before the steps: a one-shot iterator initialises inside the first
            # step that uses it, and a step that fails (the assert) while it does so cancels
            # the initialisation for good, on either executor, depending on timing.
            state["iterator"] = tf.compat.v1.data.make_initializable_iterator(_make_dataset(spec))
            initializers.append(state["iterator"].initializer)
        builder = _Builder(spec, state)
        if spec["assert_step"] is not None:
            builder.gate = [tf.debugging.Assert(tf.not_equal(self.step, spec["assert_step"]),
                                                [self.step], name="fuzz_assert")]
        self.values = builder.program(spec["nodes"], self.inputs, 0)
        self.init = tf.group(tf.compat.v1.global_variables_initializer(), *initializers)

    def feed_inputs_of(self, tensor) -> set:
        """Indices of the inputs ``tensor`` depends on (data or control), and -1 for the step."""
        seen, stack, found = set(), [tensor.op], set()
        names = {t.op.name: i for i, t in enumerate(self.inputs)}
        names[self.step.op.name] = -1
        while stack:
            op = stack.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.name in names:
                found.add(names[op.name])
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
        return found

    def config(self, executor_type: str) -> tf.compat.v1.ConfigProto:
        config = tf.compat.v1.ConfigProto()
        if not self.spec["optimize"]:
            _unoptimized(config)
        if executor_type:
            config.experimental.executor_type = executor_type
        return config

    def run(self, executor_type: str) -> dict:
        spec = self.spec
        with tf.compat.v1.Session(graph=self.graph, config=self.config(executor_type)) as sess:
            sess.run(self.init)
            steps = [_capture(lambda s=s: self._step(sess, s)) for s in range(len(spec["plans"]))]
            for plan, step in zip(spec["plans"], steps):
                step["partial"] = bool(plan.get("partial"))
            threads = _threaded(spec["threads"], lambda: [
                _capture(lambda s=s: self._step(sess, s, allow_partial=False))
                for s in range(len(spec["plans"]))])
        return {"steps": steps, "threads": threads}

    def _step(self, sess, s: int, allow_partial: bool = True):
        spec, plan = self.spec, self.spec["plans"][s]
        out = {}
        if plan.get("timeout"):
            try:
                sess.run(self.empty_dequeue, options=tf.compat.v1.RunOptions(timeout_in_ms=30))
                out["timeout"] = "no error"
            except tf.errors.OpError as e:
                out["timeout"] = type(e).__name__
        feeds = {self.inputs[i]: _value(spec["value_seed"], 100 * (s + 1) + i) for i in plan["feed"]}
        feeds[self.step] = np.int32(s)
        for i in plan.get("feed_nodes", []):
            feeds[self.values[i]] = _value(spec["value_seed"], 100 * (s + 1) + 50 + i)
        fetches = {f"n{i}": self.values[i] for i in plan["fetch"]}
        if plan.get("partial") and allow_partial:
            out.update(self._partial(sess, feeds, fetches, s))
        else:
            out.update(sess.run(fetches, feeds))
        return out

    def _partial(self, sess, feeds, fetches, s: int) -> dict:
        spec = self.spec
        all_feeds = {t: feeds.get(t, _value(spec["value_seed"], i)) for i, t in enumerate(self.inputs)}
        all_feeds[self.step] = feeds[self.step]
        rng = random.Random(spec["value_seed"] + s)
        first_inputs = set(rng.sample(range(len(self.inputs)), rng.randint(0, len(self.inputs)))) | {-1}
        names = sorted(fetches)
        first = [n for n in names if self.feed_inputs_of(fetches[n]) <= first_inputs]
        second = [n for n in names if n not in first]
        handle = sess.partial_run_setup([fetches[n] for n in names], list(all_feeds))
        feed1 = {t: v for t, v in all_feeds.items()
                 if (-1 if t is self.step else self.inputs.index(t)) in first_inputs}
        feed2 = {t: v for t, v in all_feeds.items() if t not in feed1}
        out = {}
        if not first or not second:
            values = sess.partial_run(handle, [fetches[n] for n in names], feed_dict=all_feeds)
            return dict(zip(names, values))
        out.update(zip(first, sess.partial_run(handle, [fetches[n] for n in first], feed_dict=feed1)))
        out.update(zip(second, sess.partial_run(handle, [fetches[n] for n in second], feed_dict=feed2)))
        return out


class FunctionCase:
    """A spec built into a tf.function (cond_v2/while_v2, nested tf.function calls)."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.state = {"variables": [tf.Variable(_initial_variable(spec, i), name=f"var{i}")
                                    for i in range(len(spec["variables"]))]}
        if _uses(spec, "dataset"):
            self.state["iterator"] = iter(_make_dataset(spec))
        builder = _Builder(spec, self.state)

        @tf.function
        def step_fn(step, *inputs):
            builder.last = {}
            builder.gate = []
            if spec["assert_step"] is not None:
                builder.gate = [tf.debugging.Assert(tf.not_equal(step, spec["assert_step"]), [step])]
            values = builder.program(spec["nodes"], list(inputs), 0)
            return {f"n{i}": values[i] for i in spec["outputs"]}

        self.fn = step_fn

    def run(self, executor_type: str) -> dict:
        spec = self.spec

        def steps():
            scope = (tf.experimental.function_executor_type(executor_type) if executor_type
                     else _null())
            with scope:
                return [_capture(lambda s=s: self._step(s)) for s in range(len(spec["plans"]))]

        return {"steps": steps(), "threads": _threaded(spec["threads"], steps)}

    def _step(self, s: int) -> dict:
        spec, plan = self.spec, self.spec["plans"][s]
        inputs = [tf.constant(_value(spec["value_seed"], 100 * (s + 1) + i) if i in plan["feed"]
                              else _value(spec["value_seed"], i)) for i in range(spec["inputs"])]
        return {k: v.numpy() for k, v in self.fn(tf.constant(s, tf.int32), *inputs).items()}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _capture(fn: Callable[[], dict]) -> dict:
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001 - the class is the result
        return {"error": type(e).__name__, "message": str(e).splitlines()[0][:200] if str(e) else ""}


def _threaded(count: int, fn: Callable[[], list]) -> list:
    if not count:
        return []
    results: List = [None] * count

    def worker(i):
        results[i] = fn()

    threads = [threading.Thread(target=worker, args=(i,), name=f"fuzz-step-{i}") for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def build(spec: dict):
    """The spec built: a GraphCase (graph mode) or FunctionCase (function mode)."""
    return GraphCase(spec) if spec["mode"] == "graph" else FunctionCase(spec)


# --------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------

def compare_steps(want: dict, got: dict, where: str) -> List[str]:
    """Differences between two step results, with the conformance suite's rule."""
    if "error" in want or "error" in got:
        if want.get("error") != got.get("error"):
            return [f"{where}: {_describe(got)} != {_describe(want)}"]
        return []
    want, got = want["ok"], got["ok"]
    if sorted(want) != sorted(got):
        return [f"{where}: fetched {sorted(got)} != {sorted(want)}"]
    out = []
    for key in sorted(want):
        a, b = np.asarray(want[key]), np.asarray(got[key])
        if a.dtype != b.dtype or a.shape != b.shape:
            out.append(f"{where}[{key}]: {b.dtype}{b.shape} != {a.dtype}{a.shape}")
        elif np.issubdtype(a.dtype, np.floating):
            if not np.allclose(b, a, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
                out.append(f"{where}[{key}]: max |diff| {np.max(np.abs(b - a)):.3g}")
        elif not np.array_equal(a, b):
            out.append(f"{where}[{key}]: {b!r} != {a!r}")
    return out


def _describe(step: dict) -> str:
    return f"error {step['error']} ({step.get('message', '')})" if "error" in step else "ok"


def _failed_partial(step: dict) -> bool:
    return bool(step.get("partial")) and "error" in step


def _cancelled(step: dict) -> bool:
    return step.get("error") == "CancelledError"


def compare_runs(want: dict, got: dict, label: str) -> List[str]:
    """Differences between two runs of a spec, step by step.

    After a partial run that failed, either executor's later steps in that session may fail
    with CancelledError: DirectSession hands a partial run's executors the session's own
    cancellation manager (PRunSetup), and when the failed partial run's state goes while its
    executor still runs, the rendezvous abort fails an op and the executor cancels the whole
    session ("Run call was cancelled"). Whether the executor finished first is timing: stock
    TensorFlow does it too (seed 1049 under a CPU hog: DEFAULT 1 run in 30). So from then on
    a CancelledError on either side is not a difference.
    """
    diffs = []
    session_may_be_cancelled = False
    for s, (a, b) in enumerate(zip(want["steps"], got["steps"])):
        if not (session_may_be_cancelled and (_cancelled(a) or _cancelled(b))):
            diffs += compare_steps(a, b, f"{label} step {s}")
        session_may_be_cancelled |= _failed_partial(a) or _failed_partial(b)
    for t, thread_steps in enumerate(got["threads"]):
        for s, (a, b) in enumerate(zip(want["steps"], thread_steps)):
            if session_may_be_cancelled and (_cancelled(a) or _cancelled(b)):
                continue
            diffs += compare_steps(a, b, f"{label} thread {t} step {s}")
    return diffs


# --------------------------------------------------------------------------
# Running with a time limit
# --------------------------------------------------------------------------

class Hang(Exception):
    """A run did not finish within its time limit."""


def _with_timeout(fn: Callable[[], dict], timeout: float, label: str) -> dict:
    box: dict = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = e

    thread = threading.Thread(target=target, name=f"fuzz-run {label}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise Hang(f"{label}: no result after {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


def layouts_allowed() -> List[Tuple[int, int]]:
    cores = len(os.sched_getaffinity(0))
    return [(e, t) for e, t in ALL_LAYOUTS if e * t <= cores]


def parse_layouts(text: str) -> List[Tuple[int, int]]:
    out = []
    for item in text.split(","):
        try:
            e, t = (int(v) for v in item.lower().split("x"))
        except ValueError:
            raise ValueError(f"--layouts {text!r} is invalid; allowed: comma-separated ExT, e.g. 1x1,2x1")
        out.append((e, t))
    return out


def check_spec(spec: dict, layouts: Sequence[Tuple[int, int]], timeout: float) -> List[str]:
    """Runs ``spec`` under DEFAULT and under GRAPHI in each layout; returns the differences.

    Raises Hang when a run exceeds ``timeout`` seconds.
    """
    import graphi_tf

    label = f"seed {spec['seed']} {spec['mode']}"
    # A tf.compat.v1 graph is built once: each session has its own variables, queues and
    # iterators. A tf.function is traced afresh per run, so that its nested calls (whose
    # executor is fixed when they are traced) run on the executor under test.
    graph_case = build(spec) if spec["mode"] == "graph" else None

    def case():
        return graph_case or build(spec)

    want = _with_timeout(lambda: case().run(""), timeout, f"{label} DEFAULT")
    diffs = []
    try:
        for e, t in layouts:
            graphi_tf.configure(executors=e, threads_per_executor=t)
            got = _with_timeout(lambda: case().run(graphi_tf.EXECUTOR_TYPE), timeout,
                                f"{label} GRAPHI {e}x{t}")
            diffs += compare_runs(want, got, f"{label} GRAPHI {e}x{t}")
    finally:
        graphi_tf.configure()
    return diffs


# --------------------------------------------------------------------------
# Shrinking
# --------------------------------------------------------------------------

def _remap_refs(nodes: List[dict], removed: int, replacement: int, base: int) -> None:
    """Rewrites the refs of ``nodes`` (values numbered from ``base``) after value ``removed``
    is gone: refs to it point to ``replacement``, later refs move down by one."""
    for k, node in enumerate(nodes):
        node["in"] = [replacement if r == removed else (r - 1 if r > removed else r)
                      for r in node["in"]]


def remove_node(spec: dict, path: Tuple[int, ...]) -> dict:
    """A copy of ``spec`` without the node at ``path`` (top-level index, or indices into
    nested bodies as (top, "body"/"else", index, ...)); refs to it go to its first input."""
    spec = copy.deepcopy(spec)
    if len(path) == 1:
        index = path[0]
        node = spec["nodes"][index]
        removed = spec["inputs"] + index
        replacement = node["in"][0] if node["in"] else 0
        del spec["nodes"][index]
        _remap_refs(spec["nodes"][index:], removed, replacement, 0)

        def fix(refs):
            return sorted({replacement if r == removed else (r - 1 if r > removed else r) for r in refs})

        last = spec["inputs"] + len(spec["nodes"]) - 1
        if spec["outputs"]:
            spec["outputs"] = [r for r in fix(spec["outputs"]) if r >= spec["inputs"]] or [last]
        for plan in spec["plans"]:
            if "fetch" in plan:
                plan["fetch"] = [r for r in fix(plan["fetch"]) if r >= spec["inputs"]] or [last]
                plan["feed_nodes"] = [r for r in fix(plan["feed_nodes"])
                                      if r >= spec["inputs"] and r not in plan["fetch"]
                                      and spec["nodes"][r - spec["inputs"]]["op"] in FEEDABLE_KINDS]
        return spec
    owner = spec["nodes"][path[0]]
    for k in range(1, len(path) - 2, 2):
        owner = owner[path[k]][path[k + 1]]
    body, index = owner[path[-2]], path[-1]
    if len(body) <= 1:
        raise ValueError("a body keeps at least one node")
    node = body[index]
    removed = 2 + index
    replacement = node["in"][0]
    del body[index]
    _remap_refs(body[index:], removed, replacement, 0)
    return spec


def hoist_body(spec: dict, index: int, key: str) -> dict:
    """A copy of ``spec`` with top-level control-flow node ``index`` replaced by its
    ``key`` ("body" or "else") program inlined: the loop or branch is gone, its ops stay."""
    spec = copy.deepcopy(spec)
    node = spec["nodes"][index]
    body = node[key]
    g = spec["inputs"] + index
    grow = len(body) - 1

    def outer(r):
        return r if r < g else (g + grow if r == g else r + grow)

    inlined = []
    for k, inner in enumerate(body):
        inner = copy.deepcopy(inner)
        inner["in"] = [node["in"][r] if r < 2 else g + (r - 2) for r in inner["in"]]
        inlined.append(inner)
    for later in spec["nodes"][index + 1:]:
        later["in"] = [outer(r) for r in later["in"]]
    spec["nodes"][index:index + 1] = inlined
    spec["outputs"] = sorted({outer(r) for r in spec["outputs"]})
    for plan in spec["plans"]:
        if "fetch" in plan:
            plan["fetch"] = sorted({outer(r) for r in plan["fetch"]})
            plan["feed_nodes"] = sorted({outer(r) for r in plan["feed_nodes"]})
    return spec


def _node_paths(spec: dict) -> List[Tuple]:
    paths: List[Tuple] = []

    def walk(nodes, prefix):
        for i, node in enumerate(nodes):
            here = prefix + (i,)
            for key in ("body", "else"):
                if key in node:
                    walk(node[key], here + (key,))
            paths.append(here)

    walk(spec["nodes"], ())
    return paths


def _candidates(spec: dict):
    """Smaller variants of ``spec``, roughly biggest cut first."""
    if len(spec["plans"]) > 1:
        for keep in (1, len(spec["plans"]) - 1):
            smaller = copy.deepcopy(spec)
            smaller["plans"] = smaller["plans"][:keep]
            if smaller["assert_step"] is not None and smaller["assert_step"] >= keep:
                smaller["assert_step"] = None
            yield smaller
    for index in reversed(range(len(spec["nodes"]))):
        if len(spec["nodes"]) > 1:
            yield remove_node(spec, (index,))
    for index, node in enumerate(spec["nodes"]):
        for key in ("body", "else"):
            if key in node:
                yield hoist_body(spec, index, key)
    for path in sorted(_node_paths(spec), key=len, reverse=True):
        if len(path) > 1:
            try:
                yield remove_node(spec, path)
            except ValueError:
                pass
    simpler = []
    if spec["threads"]:
        simpler.append(("threads", 0))
    if spec["assert_step"] is not None:
        simpler.append(("assert_step", None))
    if spec["optimize"]:
        simpler.append(("optimize", False))
    for key, value in simpler:
        smaller = copy.deepcopy(spec)
        smaller[key] = value
        yield smaller
    for s, plan in enumerate(spec["plans"]):
        for key, empty in (("partial", False), ("timeout", False), ("feed", []), ("feed_nodes", [])):
            if plan.get(key):
                smaller = copy.deepcopy(spec)
                smaller["plans"][s][key] = empty
                yield smaller
        if len(plan.get("fetch", [])) > 1:
            smaller = copy.deepcopy(spec)
            smaller["plans"][s]["fetch"] = plan["fetch"][-1:]
            yield smaller
    if len(spec["outputs"]) > 1:
        smaller = copy.deepcopy(spec)
        smaller["outputs"] = spec["outputs"][-1:]
        yield smaller


def size(spec: dict) -> int:
    """Number of nodes in ``spec``, nested bodies included."""
    return len(_node_paths(spec))


def shrink(spec: dict, fails: Callable[[dict], bool], max_checks: int = 400) -> dict:
    """Greedily removes ops, steps and features from ``spec`` while ``fails(spec)`` holds."""
    checks = 0
    improved = True
    while improved and checks < max_checks:
        improved = False
        for candidate in _candidates(spec):
            checks += 1
            if fails(candidate):
                spec = candidate
                improved = True
                break
            if checks >= max_checks:
                break
    return spec


def describe(spec: dict) -> str:
    """A readable listing of ``spec``'s program."""
    lines = [f"seed {spec['seed']} mode {spec['mode']}: {spec['inputs']} inputs v0..v{spec['inputs'] - 1}, "
             f"variables {spec['variables']}, assert_step {spec['assert_step']}, optimize {spec['optimize']}, "
             f"threads {spec['threads']}, {len(spec['plans'])} steps"]

    def walk(nodes, base, indent):
        for i, node in enumerate(nodes):
            extra = {k: v for k, v in node.items() if k not in ("op", "in", "body", "else")}
            lines.append(f"{indent}v{base + i} = {node['op']}({', '.join(f'v{r}' for r in node['in'])})"
                         + (f" {extra}" if extra else ""))
            for key in ("body", "else"):
                if key in node:
                    lines.append(f"{indent}  {key} (v0, v1 = the inputs):")
                    walk(node[key], 2, indent + "    ")

    walk(spec["nodes"], spec["inputs"], "  ")
    for s, plan in enumerate(spec["plans"]):
        lines.append(f"  step {s}: {plan}")
    if spec["outputs"]:
        lines.append(f"  outputs: {spec['outputs']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def _subprocess_fails(spec: dict, layouts, timeout: float) -> bool:
    """Whether ``spec`` fails (a difference or a hang) in a fresh process."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--replay", f.name, "--timeout", str(timeout),
             "--layouts", ",".join(f"{e}x{t}" for e, t in layouts)],
            capture_output=True, timeout=timeout * (len(layouts) + 1) + 120)
        return proc.returncode != 0
    except subprocess.TimeoutExpired:
        return True
    finally:
        os.unlink(f.name)


def _report_hang(message: str) -> None:
    print(f"HANG {message}", file=sys.stderr, flush=True)
    print("every thread's stack:", file=sys.stderr, flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:20", help="A:B, the seeds A..B-1 (default 0:20)")
    parser.add_argument("--mode", choices=("graph", "function", "both"), default="both")
    parser.add_argument("--layouts", default=None,
                        help="comma-separated ExT (default: those of 1x1,1x2,2x1 that fit the affinity mask)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default 60)")
    parser.add_argument("--shrink", action="store_true", help="shrink each failing seed and print it")
    parser.add_argument("--json", metavar="OUT", help="write the totals and failures to OUT")
    parser.add_argument("--replay", metavar="SPEC", help="run one spec (JSON, as --shrink prints)")
    args = parser.parse_args(argv)
    try:
        layouts = parse_layouts(args.layouts) if args.layouts else layouts_allowed()
        a, b = (int(v) for v in args.seeds.split(":"))
    except ValueError as e:
        parser.error(str(e) if "layouts" in str(e) else f"--seeds {args.seeds!r} is invalid; allowed: A:B")
    import graphi_tf

    for e, t in layouts:  # a layout that does not fit is a usage error, named by configure
        try:
            graphi_tf.configure(executors=e, threads_per_executor=t)
        except ValueError as err:
            parser.error(f"--layouts {e}x{t}: {err}")
    graphi_tf.configure()

    modes = MODES if args.mode == "both" else (args.mode,)
    specs = ([json.load(open(args.replay))] if args.replay
             else [generate(seed, mode) for seed in range(a, b) for mode in modes])
    totals = {"seeds": b - a if not args.replay else 1, "modes": list(modes), "graphs": 0,
              "layouts": [f"{e}x{t}" for e, t in layouts], "runs": 0, "differences": 0, "hangs": 0,
              "failures": [], "wall_s": 0.0}
    start = time.monotonic()

    def write_json():
        totals["wall_s"] = round(time.monotonic() - start, 1)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(totals, f, indent=1)

    for spec in specs:
        label = f"seed {spec['seed']} mode {spec['mode']}"
        try:
            diffs = check_spec(spec, layouts, args.timeout)
        except Hang as hang:
            _report_hang(f"{label}: {hang}")
            totals["hangs"] += 1
            totals["failures"].append({"seed": spec["seed"], "mode": spec["mode"], "hang": str(hang)})
            if args.shrink:
                small = shrink(spec, lambda s: _subprocess_fails(s, layouts, args.timeout), max_checks=60)
                print(f"shrunk reproducer ({size(small)} nodes):\n{describe(small)}\n{json.dumps(small)}",
                      file=sys.stderr, flush=True)
                totals["failures"][-1]["shrunk"] = small
            write_json()
            os._exit(3)  # the hung run still holds its threads; nothing after it is trustworthy
        totals["graphs"] += 1
        totals["runs"] += 1 + len(layouts)
        if diffs:
            totals["differences"] += 1
            print(f"DIFFERENCE {label}:\n  " + "\n  ".join(diffs[:10]), file=sys.stderr, flush=True)
            failure = {"seed": spec["seed"], "mode": spec["mode"], "differences": diffs[:20]}
            if args.shrink:
                def fails(s):
                    try:
                        return bool(check_spec(s, layouts, args.timeout))
                    except Hang:
                        return True
                small = shrink(spec, fails)
                print(f"shrunk reproducer ({size(small)} nodes, from {size(spec)}):\n{describe(small)}\n"
                      f"replay: save the next line as spec.json and run "
                      f"python3 tools/fuzz_executor.py --replay spec.json\n{json.dumps(small)}",
                      file=sys.stderr, flush=True)
                failure["shrunk"] = small
            totals["failures"].append(failure)
        write_json()
    write_json()
    print(f"{totals['graphs']} graphs ({totals['seeds']} seeds x {'+'.join(modes)}), layouts "
          f"{','.join(totals['layouts'])}, {totals['runs']} runs: {totals['differences']} differences, "
          f"{totals['hangs']} hangs, {totals['wall_s']} s")
    return 1 if totals["differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
