"""graphi_tf: the GRAPHI executor for TensorFlow on manycore CPUs.

``import graphi_tf`` registers executor type "GRAPHI". Select it with

* TF1 sessions: ``tf.compat.v1.Session(config=graphi_tf.session_config())``
  (or ``config.experimental.executor_type = "GRAPHI"``);
* tf.function / Keras: ``with graphi_tf.executor_scope():``
  (or ``tf.experimental.function_executor_type("GRAPHI")``).
"""
from graphi_tf import _loader
from graphi_tf.config import EXECUTOR_TYPE, POLICIES, configure, executor_scope, session_config
from graphi_tf.info import info
from graphi_tf.version import __version__

_loader.native()

__all__ = [
    "EXECUTOR_TYPE",
    "POLICIES",
    "configure",
    "executor_scope",
    "info",
    "session_config",
    "__version__",
]
