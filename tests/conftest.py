"""Shared pytest fixtures for graphi_tf tests.

Differential testing
--------------------
The conformance suite runs each case under TensorFlow's stock executor
("DEFAULT" arm) and under the Graphi executor ("GRAPHI" arm) and asserts that
the results match.  An *arm* knows how to put TensorFlow on its executor:

* TF1 sessions:  ``arm.session_config(base)`` returns the ConfigProto to use.
* TF2 functions: ``with arm.scope(): ...`` selects the executor for eager calls
  of ``tf.function``s made on the current thread (the option is thread-local).

Fixtures:

* ``executor_type`` -- parametrized over "DEFAULT" and "GRAPHI"; a test that uses
  it runs once per executor and must hold for each on its own.
* ``arm`` -- the :class:`Arm` for the current ``executor_type``.
* ``arms`` -- ``{"DEFAULT": Arm, "GRAPHI": Arm}``.
* ``run_both`` -- ``run_both(case)`` calls ``case(arm)`` for the DEFAULT arm and
  then for the GRAPHI arm, and compares the two results (nested structures of
  arrays/scalars) with :func:`assert_same_results`.
* ``cli_env`` -- the environment for a ``graphi-tf`` subprocess: no GRAPHI_* variables,
  TensorFlow's logging off, this tree first on PYTHONPATH.
* ``cache_env`` -- a cache directory of the test's own (``GRAPHI_CACHE_DIR``; ``GRAPHI_TUNE``
  unset) and a fresh "already reported" registry of ``graphi_tf.cache``.

Fake mode
---------
With ``GRAPHI_TEST_FAKE=1`` the plugin is not imported and the GRAPHI arm runs on
TensorFlow's "DEFAULT" executor (selected explicitly, so the configuration path
is still exercised).  This validates the tests themselves before the executor
exists.  ``GRAPHI_TEST_FAKE_EXECUTOR=<type>`` makes the fake GRAPHI arm use another
registered executor instead, e.g. "SINGLE_THREADED_EXECUTOR" to watch the suite
reject an executor that does not conform.  Otherwise ``graphi_tf`` is imported here, so a broken plugin fails the
whole run early, and the process-wide Graphi teams are reset after every test.
"""

import contextlib
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Hermetic runs: the user's cache of tuned settings must not steer the tests
# (graphi_tf applies matching entries at import), and tests must not write to
# it. Subprocesses started by tests inherit this.
os.environ["GRAPHI_CACHE_DIR"] = tempfile.mkdtemp(prefix="graphi_tf_test_cache_")
for _setting in ("GRAPHI_EXECUTORS", "GRAPHI_THREADS_PER_EXECUTOR", "GRAPHI_POLICY", "GRAPHI_TUNE"):
    os.environ.pop(_setting, None)
# A run of the suite on another placement: GRAPHI_TEST_EXECUTORS=stock runs every GRAPHI
# step that no test configures on TensorFlow's pools (tests/conformance/
# test_stock_pools_conformance.py does that for the conformance suites).
if os.environ.get("GRAPHI_TEST_EXECUTORS"):
    os.environ["GRAPHI_EXECUTORS"] = os.environ["GRAPHI_TEST_EXECUTORS"]
# Online autotuning re-partitions the teams during a graph's first steps; tests that
# check layouts, counters or timings must not see that. The autotuning tests turn it on
# themselves (configure(autotune=True), or GRAPHI_AUTOTUNE=1 in a subprocess).
os.environ["GRAPHI_AUTOTUNE"] = "0"

import numpy as np
import pytest
import tensorflow as tf

# Shared graph builders live next to the conformance tests; make them importable
# regardless of pytest's import mode.
_CONFORMANCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conformance")
if _CONFORMANCE_DIR not in sys.path:
    sys.path.insert(0, _CONFORMANCE_DIR)

FAKE = os.environ.get("GRAPHI_TEST_FAKE") == "1"
FAKE_EXECUTOR = os.environ.get("GRAPHI_TEST_FAKE_EXECUTOR", "DEFAULT")

if FAKE:
    graphi_tf = None
else:
    import graphi_tf  # registers the "GRAPHI" executor type

ARM_NAMES = ("DEFAULT", "GRAPHI")

USABLE = len(os.sched_getaffinity(0))
# The team layouts a conformance test runs GRAPHI in one after the other
# (graphi_tf.configure) where one layout is not enough: those that fit the usable cores.
LAYOUTS = [(e, t) for e, t in ((1, 1), (1, 2), (2, 1)) if e * t <= USABLE]

FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6


class Arm:
    """One side of a differential test: how to run TensorFlow on an executor."""

    def __init__(self, name):
        if name not in ARM_NAMES:
            raise ValueError(f"unknown arm {name!r}")
        self.name = name
        self.is_graphi = name == "GRAPHI"
        # Executor type actually requested from TensorFlow.  The DEFAULT arm
        # leaves it unset (TensorFlow's default); the fake GRAPHI arm names
        # "DEFAULT" (or GRAPHI_TEST_FAKE_EXECUTOR) explicitly.
        if not self.is_graphi:
            self.executor_type = ""
        elif FAKE:
            self.executor_type = FAKE_EXECUTOR
        else:
            self.executor_type = graphi_tf.EXECUTOR_TYPE

    def __repr__(self):
        return f"Arm({self.name}, executor_type={self.executor_type!r}, fake={FAKE})"

    def session_config(self, base=None):
        """ConfigProto for a tf.compat.v1.Session on this arm (a copy of ``base``)."""
        if self.is_graphi and not FAKE:
            return graphi_tf.session_config(base)
        config = tf.compat.v1.ConfigProto()
        if base is not None:
            config.CopyFrom(base)
        if self.is_graphi:
            config.experimental.executor_type = self.executor_type
        return config

    def session(self, graph, base=None):
        """A new tf.compat.v1.Session on ``graph`` configured for this arm."""
        return tf.compat.v1.Session(graph=graph, config=self.session_config(base))

    def scope(self):
        """Context manager selecting this arm's executor for tf.function calls
        made on the current thread."""
        if not self.is_graphi:
            return contextlib.nullcontext()
        if FAKE:
            return tf.experimental.function_executor_type(self.executor_type)
        return graphi_tf.executor_scope()


def _flatten_with_paths(value, path="result"):
    if isinstance(value, dict):
        out = []
        for key in sorted(value):
            out.extend(_flatten_with_paths(value[key], f"{path}[{key!r}]"))
        return out
    if isinstance(value, (list, tuple)):
        out = []
        for i, item in enumerate(value):
            out.extend(_flatten_with_paths(item, f"{path}[{i}]"))
        return out
    if isinstance(value, tf.Tensor):
        value = value.numpy()
    return [(path, np.asarray(value))]


def _structure(value):
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_structure(v) for v in value]
    return None


def assert_same_results(expected, actual, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
    """Asserts two nested results are equal: same structure, shapes and dtypes;
    floating/complex leaves allclose(rtol, atol), everything else exact."""
    assert _structure(expected) == _structure(actual), "result structures differ"
    for (path, want), (_, got) in zip(_flatten_with_paths(expected), _flatten_with_paths(actual)):
        assert want.dtype == got.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
        assert want.shape == got.shape, f"{path}: shape {got.shape} != {want.shape}"
        if np.issubdtype(want.dtype, np.floating) or np.issubdtype(want.dtype, np.complexfloating):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=path)
        else:
            np.testing.assert_array_equal(got, want, err_msg=path)


@pytest.fixture(params=ARM_NAMES)
def executor_type(request):
    """Executor under test: "DEFAULT" or "GRAPHI" (a parametrized fixture)."""
    return request.param


@pytest.fixture
def arm(executor_type):
    return Arm(executor_type)


@pytest.fixture
def arms():
    return {name: Arm(name) for name in ARM_NAMES}


@pytest.fixture
def run_both(arms):
    """``run_both(case, rtol=..., atol=...)``: runs ``case(arm)`` on the DEFAULT
    arm, then on the GRAPHI arm, asserts the results are the same and returns
    ``(default_result, graphi_result)``.  ``case`` must build everything it uses
    (graphs, sessions, tf.functions, models) afresh on each call."""

    def _run_both(case, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
        default_result = case(arms["DEFAULT"])
        graphi_result = case(arms["GRAPHI"])
        assert_same_results(default_result, graphi_result, rtol=rtol, atol=atol)
        return default_result, graphi_result

    return _run_both


@pytest.fixture(autouse=True)
def _reset_graphi_teams():
    """Restores the process-wide Graphi team layout to its defaults after each
    test, so a test that re-partitions teams cannot affect the next one."""
    yield
    if not FAKE:
        graphi_tf._loader.native().clear_adoptions()
        graphi_tf.configure()


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """A cache directory of the test's own (module docstring); yields its path."""
    from graphi_tf import cache

    directory = tmp_path / "cache"
    monkeypatch.setenv("GRAPHI_CACHE_DIR", str(directory))
    monkeypatch.delenv("GRAPHI_TUNE", raising=False)
    cache._reset_reports()
    yield directory
    cache._reset_reports()


@pytest.fixture
def cli_env():
    """The environment for a ``graphi-tf`` subprocess of a test (module docstring)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHI_")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env
