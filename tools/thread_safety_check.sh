#!/usr/bin/env bash
# Checks the lock annotations (cc/util/thread_annotations.h): compiles every
# translation unit under cc/ and python/bindings.cc with clang's thread-safety
# analysis as errors (-fsyntax-only: nothing is written), against the
# TensorFlow headers of the Python that imports tensorflow.
#
#   tools/thread_safety_check.sh            # uses python3 and clang++ from PATH
#   PYTHON=.venv/bin/python CXX=clang++-14 tools/thread_safety_check.sh
#
# GCC ignores the annotations, so only this check enforces them. Exits
# non-zero, with clang's messages, if any file fails.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
export TF_CPP_MIN_LOG_LEVEL=3
CXX="${CXX:-clang++}"
JOBS="${JOBS:-2}"
command -v "$CXX" >/dev/null || { echo "thread_safety_check: $CXX not found (apt-get install -y clang)" >&2; exit 2; }

# TensorFlow's headers as system headers: their own warnings are not ours.
read -r -a TF_FLAGS < <("$PYTHON" - <<'PY'
import tensorflow as tf
flags = []
for f in tf.sysconfig.get_compile_flags():
    flags.append("-isystem" + f[2:] if f.startswith("-I") else f)
print(" ".join(flags))
PY
)
PYBIND_INCLUDE="$("$PYTHON" -c 'import pybind11; print(pybind11.get_include())')"
PY_INCLUDE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"

FLAGS=("${TF_FLAGS[@]}" -isystem "$PYBIND_INCLUDE" -isystem "$PY_INCLUDE" -I.
       -fsyntax-only -Wthread-safety -Werror
       -Wno-deprecated-declarations -Wno-unknown-warning-option)

mapfile -t SOURCES < <(find cc -name '*.cc' | sort; echo python/bindings.cc)
printf '%s\n' "${SOURCES[@]}" |
  xargs -P "$JOBS" -I{} sh -c 'f=$1; shift; echo "  $f" >&2; exec "$@" "$f"' _ {} "$CXX" "${FLAGS[@]}" ||
  { echo "thread_safety_check: FAILED" >&2; exit 1; }
echo "thread_safety_check: ${#SOURCES[@]} translation units pass -Wthread-safety -Werror"
