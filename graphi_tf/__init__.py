"""graphi_tf: the GRAPHI executor for TensorFlow on manycore CPUs.

``import graphi_tf`` registers executor type "GRAPHI". Select it with

* TF1 sessions: ``tf.compat.v1.Session(config=graphi_tf.session_config())``
  (or ``config.experimental.executor_type = "GRAPHI"``);
* tf.function / Keras: ``with graphi_tf.executor_scope():``
  (or ``tf.experimental.function_executor_type("GRAPHI")``).

A graph nobody tuned is tuned online during its first steps (zero-config autotuning;
``GRAPHI_AUTOTUNE=0`` turns it off). ``graphi_tf.tune(step_fn)`` does the same on request,
longer: it times the team layouts in interleaved rounds, adopts one only if it beats the
default by more than its noise, and caches the outcome per graph signature, so later
processes start tuned.
"""
# Before anything imports TensorFlow: the graphi-tf command line shows no TensorFlow
# INFO banners (graphi_tf._cli_logging says why and when).
from graphi_tf import _cli_logging

_cli_logging.quiet_tensorflow_if_cli()

with _cli_logging.tensorflow_import_banners_filtered():
    from graphi_tf import _loader  # noqa: E402
    from graphi_tf.config import EXECUTOR_TYPE, POLICIES, configure, executor_scope, session_config  # noqa: E402
    from graphi_tf.info import info  # noqa: E402
    from graphi_tf.tune import TuneResult, tune  # noqa: E402
    from graphi_tf.version import __version__  # noqa: E402

    _loader.native()

# Settings and costs tuned earlier for graphs on this machine (same TF and
# graphi_tf versions) apply from a graph's first step; GRAPHI_TUNE=0 skips it.
from graphi_tf import cache as _cache  # noqa: E402

_cache.apply_cached_entries()

# Zero-config autotuning runs in the executor; its decisions are cached as they are made
# (graphi_tf.autotune_persister), so the next process starts tuned.
from graphi_tf import autotune_persister as _autotune_persister  # noqa: E402

_autotune_persister.start_persister()

# GRAPHI_TRACE=path.json: record a step of every GRAPHI graph and write a Chrome
# trace at exit (docs/tracing.md).
from graphi_tf import trace as _trace  # noqa: E402

_trace.install_from_env()

__all__ = [
    "EXECUTOR_TYPE",
    "POLICIES",
    "configure",
    "executor_scope",
    "info",
    "session_config",
    "tune",
    "TuneResult",
    "__version__",
]
