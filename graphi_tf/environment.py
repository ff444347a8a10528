"""The ``GRAPHI_*`` variables graphi_tf's Python library reads, read in one place.

The native library reads its own (``GRAPHI_EXECUTORS``, ``GRAPHI_POLICY``, ``GRAPHI_AUTOTUNE``
and the executor's knobs) in one C++ file, ``cc/platform/env_settings.cc``. The Python library
reads these:

- ``GRAPHI_CACHE_DIR``: where tuned settings are cached (``graphi_tf.cache``);
- ``GRAPHI_TUNE``: ``0`` turns off everything automatic (``graphi_tf.cache``; the native
  library reads it too);
- ``GRAPHI_TRACE``, ``GRAPHI_TRACE_STEP``, ``GRAPHI_TRACE_PNG``: record a step trace with no
  code change (``graphi_tf.trace``, docs/tracing.md).

Nothing here writes the environment, and nothing else in the library reads these variables.
"""
import os
from dataclasses import dataclass
from typing import Mapping, Optional

CACHE_DIR = "GRAPHI_CACHE_DIR"
TUNE = "GRAPHI_TUNE"
TRACE = "GRAPHI_TRACE"
TRACE_STEP = "GRAPHI_TRACE_STEP"
TRACE_PNG = "GRAPHI_TRACE_PNG"


@dataclass(frozen=True)
class Environment:
    """The variables as read; each is ``""`` when unset. Values are checked where they are used."""

    cache_dir: str
    tune: str
    trace: str
    trace_step: str
    trace_png: str


def read(environ: Optional[Mapping[str, str]] = None) -> Environment:
    """Reads the variables from ``environ`` (``os.environ`` by default), stripped of blanks.

    ``GRAPHI_CACHE_DIR`` is kept as written: a path may end in a blank.
    """
    env = os.environ if environ is None else environ
    return Environment(
        cache_dir=env.get(CACHE_DIR, ""),
        tune=env.get(TUNE, ""),
        trace=env.get(TRACE, "").strip(),
        trace_step=env.get(TRACE_STEP, "").strip(),
        trace_png=env.get(TRACE_PNG, "").strip(),
    )
