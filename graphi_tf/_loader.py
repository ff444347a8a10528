"""Loads the native library once per process and registers executor "GRAPHI".

The library is bound to the TensorFlow it was compiled against (C++ ABI,
kernel and executor interfaces), so a mismatch is refused with an ImportError
that says how to rebuild instead of failing later in obscure ways.
"""
from __future__ import annotations

import glob
import importlib
import os
import threading
from types import ModuleType

import tensorflow as tf

REBUILD_COMMAND = "pip install --no-build-isolation --force-reinstall --no-deps ."

_lock = threading.Lock()
_native: ModuleType | None = None


def _library_path() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = sorted(glob.glob(os.path.join(here, "_graphi_tf*.so")))
    if not candidates:
        if os.path.isfile(os.path.join(os.path.dirname(here), "setup.py")):
            raise ImportError(
                f"graphi_tf was imported from the source tree {here}, which has no built native "
                "library (_graphi_tf*.so): Python puts the current directory first on sys.path. "
                "Run from another directory to use the installed package, or build the tree in "
                "place with: pip install --no-build-isolation -e ."
            )
        raise ImportError(
            "graphi_tf's native library (_graphi_tf*.so) is not built. "
            f"Build it with: {REBUILD_COMMAND}"
        )
    return candidates[0]


def _check_tf_version() -> None:
    try:
        from graphi_tf import _build_info
    except ImportError as e:  # pragma: no cover - only on a broken install
        raise ImportError(
            f"graphi_tf was not built (missing _build_info). Build it with: {REBUILD_COMMAND}"
        ) from e
    if _build_info.TF_VERSION != tf.__version__:
        raise ImportError(
            f"graphi_tf was built against TensorFlow {_build_info.TF_VERSION} but "
            f"TensorFlow {tf.__version__} is installed; its native library only works with "
            f"the version it was compiled against. Rebuild it with: {REBUILD_COMMAND}"
        )


def native() -> ModuleType:
    """Returns the native module, loading and registering it on first use."""
    global _native
    with _lock:
        if _native is None:
            _check_tf_version()
            path = _library_path()
            # tf.load_library runs the library's static registrar (executor
            # type "GRAPHI"); importing the same file afterwards reuses the
            # already loaded copy, so registration happens exactly once.
            tf.load_library(path)
            module = importlib.import_module("graphi_tf._graphi_tf")
            if not module.executor_registered():
                raise ImportError("graphi_tf loaded but executor type 'GRAPHI' is not registered")
            _native = module
        return _native
