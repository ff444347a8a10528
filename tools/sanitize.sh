#!/usr/bin/env bash
# Builds the whole native library (setup.py's NATIVE_SOURCES) with AddressSanitizer
# and runs, against that build:
#   cc  the C++ executor conformance test (tests/cc/executor_conformance_test.cc,
#       as tests/unit/test_cc_executor_conformance.py builds it) in its three team
#       layouts, linked with the same ASan objects;
#   py  a pytest conformance subset, with libasan LD_PRELOADed into Python and the
#       ASan library staged in a copy of the graphi_tf package that PYTHONPATH
#       puts first.
#
#   tools/sanitize.sh                       # build, then cc and py
#   tools/sanitize.sh cc                    # build, then only cc
#   tools/sanitize.sh py -- -k while -x     # arguments after -- go to pytest
#                                           # (replacing the default subset)
#   BUILD_DIR=/tmp/asan REUSE=1 tools/sanitize.sh py   # reuse a kept build
#
# Settings (environment): PYTHON (python3), CXX (g++), JOBS (2), BUILD_DIR (a new
# temporary directory, removed at exit unless given), REUSE=1 (skip the build
# when BUILD_DIR already holds one), SANITIZERS (address; address,undefined would
# add UBSan, but with GCC 12 it does not compile against TensorFlow 2.21's Abseil:
# "not a constant expression" at absl/container/internal/hash_policy_traits.h:158),
# PY_LEAKS=1 (leak checking under Python too, see below).
#
# TensorFlow and CPython are not built with ASan. Their own reports are filtered:
# leak checking runs with tools/lsan_suppressions.txt (each entry says why), and
# the options below say why each ASan default is changed. docs/reliability.md
# ("Sanitizers") says how to read a report. Any ASan report ends the process
# with a non-zero status, so a report fails the run.
#
# Not run in CI: about 5 minutes to build on 2 cores, then about 3 minutes (cc) and
# 10 minutes (py) to run.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"

PYTHON="${PYTHON:-python3}"
CXX="${CXX:-g++}"
JOBS="${JOBS:-2}"
SANITIZERS="${SANITIZERS:-address}"
STAGES=()
PYTEST_ARGS=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    cc|py) STAGES+=("$1") ;;
    --) shift; PYTEST_ARGS=("$@"); break ;;
    *) echo "sanitize: unknown argument '$1' (allowed: cc, py, then -- pytest arguments)" >&2; exit 2 ;;
  esac
  shift
done
[ "${#STAGES[@]}" -gt 0 ] || STAGES=(cc py)
[ "${#PYTEST_ARGS[@]}" -gt 0 ] || PYTEST_ARGS=(
  tests/conformance/test_session_conformance.py
  tests/conformance/test_function_conformance.py
  tests/conformance/test_fuzz_seeds.py
)
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

if [ -z "${BUILD_DIR:-}" ]; then
  BUILD_DIR="$(mktemp -d "${TMPDIR:-/tmp}/graphi_sanitize.XXXXXX")"
  trap 'rm -rf "$BUILD_DIR"' EXIT
fi
mkdir -p "$BUILD_DIR"
BUILD_DIR="$(cd "$BUILD_DIR" && pwd)"
OBJ="$BUILD_DIR/obj"
PKG="$BUILD_DIR/pkg"

# TensorFlow's flags, the include directories and the library's file name, as setup.py
# computes them; the source list is setup.py's NATIVE_SOURCES, read without running it.
{
  read -r TF_VERSION
  read -r TF_LIB
  read -r EXT_SUFFIX
  read -r -a TF_CFLAGS
  read -r -a TF_LFLAGS
  read -r -a INCLUDES
  read -r -a NATIVE_SOURCES
} < <("$PYTHON" - <<'PY'
import ast, sysconfig
import pybind11
import tensorflow as tf
tree = ast.parse(open("setup.py").read())
sources = next(ast.literal_eval(n.value) for n in tree.body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "NATIVE_SOURCES")
print(tf.__version__)
print(tf.sysconfig.get_lib())
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(" ".join(tf.sysconfig.get_compile_flags()))
print(" ".join(tf.sysconfig.get_link_flags()))
print("-I" + pybind11.get_include(), "-I" + sysconfig.get_paths()["include"])
print(" ".join(sources))
PY
)
[ "${#NATIVE_SOURCES[@]}" -gt 0 ] ||
  { echo "sanitize: could not read TensorFlow's flags or setup.py's NATIVE_SOURCES with $PYTHON" >&2; exit 2; }
case ",$SANITIZERS," in
  *,address,*) ;;
  *) echo "sanitize: SANITIZERS=$SANITIZERS must include address (e.g. address or address,undefined)" >&2; exit 2 ;;
esac
# The interpreter itself, not a wrapper: a pyenv shim is a bash script (which would run
# under LD_PRELOAD too) and picks its Python by the working directory.
PYTHON="$("$PYTHON" -c 'import sys; print(sys.executable)')"
LIBASAN="$("$CXX" -print-file-name=libasan.so)"
LIBSTDCXX="$("$CXX" -print-file-name=libstdc++.so.6)"
[ -f "$LIBASAN" ] || { echo "sanitize: $CXX has no libasan.so (apt-get install -y g++)" >&2; exit 2; }

# -O1 -g and frame pointers: reports with file:line and whole stacks at a moderate cost.
SAN_FLAGS=(-fsanitize="$SANITIZERS" -fno-omit-frame-pointer -fno-sanitize-recover=all -g -O1)
# TensorFlow's headers must describe the classes TensorFlow was built with. Abseil
# changes their layout when it sees ASan (__SANITIZE_ADDRESS__): swisstables and
# btrees gain generation counters, FixedArray gains red zones. Compiled that way,
# tensorflow::ImmutableExecutorState (absl::flat_hash_map members), built and destroyed
# by the plain libtensorflow_framework, has another size and member offsets in our
# code: its destructor then frees a stack address ("bad-free" in ~GraphiExecutor,
# the first thing this script reported). -U__SANITIZE_ADDRESS__ lets Abseil see the
# plain build; the instrumentation itself does not depend on the macro.
ABI_FLAGS=(-U__SANITIZE_ADDRESS__)
# setup.py's flags (bar -O2), PIC for the shared library; the same objects link the test.
CFLAGS=("${TF_CFLAGS[@]}" "${SAN_FLAGS[@]}" "${ABI_FLAGS[@]}" -fPIC -fvisibility=hidden -Wno-sign-compare
        -Wno-deprecated-declarations -Wno-interference-size "-DGRAPHI_BUILT_AGAINST_TF=\"$TF_VERSION\""
        -I"$REPO" "${INCLUDES[@]}" -pthread)
LIBRARY="$PKG/graphi_tf/_graphi_tf$EXT_SUFFIX"
CONFORMANCE="$BUILD_DIR/executor_conformance_test"

object_of() { echo "$OBJ/$(echo "$1" | tr / _).o"; }

build() {
  local started=$SECONDS
  mkdir -p "$OBJ"
  printf '%s\n' "${NATIVE_SOURCES[@]}" tests/cc/executor_conformance_test.cc |
    xargs -P "$JOBS" -I{} sh -c 'src=$1; obj=$2/$(echo "$src" | tr / _).o; shift 2; echo "  $src" >&2; exec "$@" -c "$src" -o "$obj"' \
      _ {} "$OBJ" "$CXX" "${CFLAGS[@]}" ||
    { echo "sanitize: compiling FAILED" >&2; exit 1; }

  # The Python package, with the ASan library in place of the plain one.
  rm -rf "$PKG"
  mkdir -p "$PKG"
  (cd "$REPO" && tar --exclude='__pycache__' --exclude='_graphi_tf*.so' --exclude='_build_info.py' -cf - graphi_tf) |
    tar -C "$PKG" -xf -
  printf '"""Written by tools/sanitize.sh: an ASan build."""\nTF_VERSION = %s\n' "'$TF_VERSION'" \
    >"$PKG/graphi_tf/_build_info.py"
  local objects=() cc_objects=() src
  for src in "${NATIVE_SOURCES[@]}"; do
    objects+=("$(object_of "$src")")
    case "$src" in cc/*) cc_objects+=("$(object_of "$src")") ;; esac
  done
  "$CXX" -shared "${SAN_FLAGS[@]}" -o "$LIBRARY" "${objects[@]}" "${TF_LFLAGS[@]}" \
    "-Wl,-rpath,$TF_LIB" -pthread

  # As tests/unit/test_cc_executor_conformance.py links it: the kernels come from
  # libtensorflow_cc, which the test references too little for --as-needed to keep.
  "$CXX" "${SAN_FLAGS[@]}" -o "$CONFORMANCE" "$(object_of tests/cc/executor_conformance_test.cc)" \
    "${cc_objects[@]}" -Wl,--no-as-needed "${TF_LFLAGS[@]}" -l:libtensorflow_cc.so.2 -Wl,--as-needed \
    "-Wl,-rpath,$TF_LIB" -lgtest -pthread
  echo "sanitize: built $LIBRARY and $CONFORMANCE in $((SECONDS - started))s"
}

# ASan options (docs/reliability.md, "Sanitizers", says how each was chosen):
#   halt_on_error=1              every report ends the process with a non-zero status.
#   detect_leaks=1 (cc)          the conformance binary is leak-checked at exit: the
#                                executor without Python. Suppressions apply (none
#                                needed there so far).
#   detect_leaks=0 (py)          CPython leaves objects unreachable at exit and TensorFlow's
#                                Python layer leaks by design; LeakSanitizer suppresses a
#                                leak when any frame of its stack matches, and every stack
#                                under Python has interpreter frames, so these cannot be
#                                told from ours by suppressions. PY_LEAKS=1 checks them
#                                anyway, with the suppressions seen so far.
#   detect_stack_use_after_return=0  GCC 12's default, stated: =1 also catches use of a
#                                returned frame's locals, at a large cost in memory; try it
#                                on a failing case.
ASAN_BASE="halt_on_error=1:detect_stack_use_after_return=0"
# With SANITIZERS=address,undefined: UBSan's reports with their stacks.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
LSAN_SETTINGS="suppressions=$REPO/tools/lsan_suppressions.txt:print_suppressions=0"

run_cc() {
  local layout status=0 started=$SECONDS
  for layout in "" "GRAPHI_EXECUTORS=1 GRAPHI_THREADS_PER_EXECUTOR=2" "GRAPHI_EXECUTORS=2 GRAPHI_THREADS_PER_EXECUTOR=1"; do
    local log="$BUILD_DIR/cc_${layout// /_}.log"
    echo "sanitize[cc]: executor_conformance_test ${layout:-default layout}"
    if env -u GRAPHI_EXECUTORS -u GRAPHI_THREADS_PER_EXECUTOR $layout GTEST_COLOR=no \
        ASAN_OPTIONS="$ASAN_BASE:detect_leaks=1" LSAN_OPTIONS="$LSAN_SETTINGS" \
        timeout 900 "$CONFORMANCE" >"$log" 2>&1; then
      grep -m1 '\[  PASSED  \]' "$log" || true
    else
      echo "sanitize[cc]: FAILED (exit $?) in layout '${layout:-default}'; its output:" >&2
      cat "$log" >&2
      status=1
    fi
  done
  echo "sanitize[cc]: done in $((SECONDS - started))s"
  return "$status"
}

run_py() {
  local started=$SECONDS
  # Run from the build directory: python -m puts the working directory first on
  # sys.path, and the source tree's graphi_tf (its plain library) must not shadow the
  # staged one.
  local env=(
    # libasan first, as ASan requires. libstdc++ too: the python binary does not link it,
    # so when ASan starts there is no __cxa_throw to intercept, and the first C++
    # exception any extension throws (matplotlib's ft2font does at import) dies with
    # "CHECK failed: ... real___cxa_throw != 0".
    LD_PRELOAD="$LIBASAN:$LIBSTDCXX"
    PYTHONPATH="$PKG"
    # pymalloc's arenas hide Python objects from ASan; plain malloc shows them.
    PYTHONMALLOC=malloc
    ASAN_OPTIONS="$ASAN_BASE:detect_leaks=${PY_LEAKS:-0}"
    LSAN_OPTIONS="$LSAN_SETTINGS"
  )
  local where
  where="$(cd "$BUILD_DIR" && env "${env[@]}" ASAN_OPTIONS="$ASAN_BASE:detect_leaks=0" "$PYTHON" -c 'import graphi_tf; print(graphi_tf._loader._library_path())')"
  [ "$where" = "$LIBRARY" ] || { echo "sanitize[py]: Python loads $where, not the ASan build $LIBRARY" >&2; exit 1; }
  echo "sanitize[py]: pytest ${PYTEST_ARGS[*]} (graphi_tf from $where)"
  local args=() a
  for a in "${PYTEST_ARGS[@]}"; do
    if [ -e "$REPO/$a" ] || [ -e "$REPO/${a%%::*}" ]; then args+=("$REPO/$a"); else args+=("$a"); fi
  done
  local status=0
  (cd "$BUILD_DIR" && env "${env[@]}" timeout 3600 "$PYTHON" -m pytest -q -p no:cacheprovider \
      --rootdir="$REPO" -c "$REPO/pyproject.toml" "${args[@]}") || status=$?
  echo "sanitize[py]: pytest exit $status in $((SECONDS - started))s"
  return "$status"
}

if [ "${REUSE:-0}" = 1 ] && [ -f "$LIBRARY" ] && [ -f "$CONFORMANCE" ]; then
  echo "sanitize: reusing the build in $BUILD_DIR"
else
  build
fi
status=0
for stage in "${STAGES[@]}"; do
  "run_$stage" || status=1
done
exit "$status"
