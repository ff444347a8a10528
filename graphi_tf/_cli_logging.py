"""TensorFlow's log level in the processes of the ``graphi-tf`` command line.

Those processes (the ``graphi-tf`` console script, ``python -m graphi_tf.cli``,
``python -m graphi_tf.ab`` and the A/B workers ``python -m graphi_tf._ab_worker``) print
their own results, and TensorFlow's INFO lines at import ("This TensorFlow binary is
optimized to use available CPU instructions ...", "oneDNN custom operations are on ...")
are only noise in them. Every graphi_tf module is imported after the package, whose
``__init__`` loads the native library and with it TensorFlow, so the command line cannot
avoid importing TensorFlow; and TensorFlow reads TF_CPP_MIN_LOG_LEVEL once, when it first
logs, during that import. So the package calls ``quiet_tensorflow_if_cli`` first thing.

A level the user set is kept, and a program that imports graphi_tf itself keeps
TensorFlow's logging as it is. Imports nothing but the standard library.
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

CLI_MODULES = ("graphi_tf.cli", "graphi_tf.ab", "graphi_tf._ab_worker")
CLI_SCRIPT = "graphi-tf"
CLI_LOG_LEVEL = "1"  # TensorFlow's INFO lines off; warnings and errors still shown


def started_as_cli(argv0: Optional[str] = None, orig_argv: Optional[Sequence[str]] = None) -> bool:
    """Whether this process is the graphi-tf console script or ``python -m`` one of
    CLI_MODULES (defaults: ``sys.argv[0]`` and ``sys.orig_argv``)."""
    if argv0 is None:
        argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == CLI_SCRIPT:
        return True
    args = list(getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv)
    return any(a == "-m" and args[i + 1] in CLI_MODULES for i, a in enumerate(args[:-1]))


def quiet_tensorflow_if_cli() -> None:
    """Sets TF_CPP_MIN_LOG_LEVEL=1 unless it is set, if this process is the command line."""
    if started_as_cli():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", CLI_LOG_LEVEL)
