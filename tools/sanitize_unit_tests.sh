#!/usr/bin/env bash
# Builds the TensorFlow-free C++ unit tests (tests/cc/*_test.cc except the
# executor conformance test, which needs TensorFlow) with sanitizers and runs
# them:
#
#   asan  -fsanitize=address,undefined   (AddressSanitizer + UndefinedBehaviorSanitizer)
#   tsan  -fsanitize=thread              (ThreadSanitizer)
#
#   tools/sanitize_unit_tests.sh             # both, one after the other
#   tools/sanitize_unit_tests.sh tsan        # one of them
#   CXX=g++-12 JOBS=2 KEEP=1 tools/sanitize_unit_tests.sh asan
#
# The sources are the ones tests/unit/test_cc_unit_tests.py compiles (a test
# checks the two lists agree), with googletest from Debian's libgtest-dev.
# Everything is built in a temporary directory (KEEP=1 keeps it and prints
# where). Every sanitizer report is fatal (-fno-sanitize-recover=all,
# halt_on_error=1), so the script exits non-zero on the first report, after
# printing it; docs/reliability.md ("Sanitizers") says how to read one.
# About 3 minutes for both on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX="${CXX:-g++}"
JOBS="${JOBS:-2}"
MODES=("$@")
[ "${#MODES[@]}" -gt 0 ] || MODES=(asan tsan)

# Keep in step with LIBRARY_SOURCES in tests/unit/test_cc_unit_tests.py
# (tests/unit/test_sanitize_scripts.py checks it).
TF_FREE_SOURCES=(
  cc/platform/topology.cc
  cc/platform/env_settings.cc
  cc/platform/thread_affinity.cc
  cc/platform/float_environment.cc
  cc/teams/team_layout.cc
  cc/teams/ready_queue.cc
  cc/teams/step_order.cc
  cc/teams/scheduler.cc
  cc/teams/steal_list.cc
  cc/tuning/autotuner.cc
  cc/tuning/adoption.cc
  cc/tuning/load_class.cc
  cc/tuning/tuning_decision.cc
  cc/profiler/cost_model.cc
  cc/teams/setting.cc
  cc/executor/setting_resolver.cc
  cc/tuning/graph_load.cc
)
mapfile -t TESTS < <(find tests/cc -name '*_test.cc' ! -name executor_conformance_test.cc | sort)

command -v "$CXX" >/dev/null || { echo "sanitize_unit_tests: $CXX not found (apt-get install -y g++)" >&2; exit 2; }
echo '#include <gtest/gtest.h>' | "$CXX" -std=c++17 -x c++ -E - -o /dev/null 2>/dev/null ||
  { echo "sanitize_unit_tests: gtest/gtest.h not found (apt-get install -y libgtest-dev)" >&2; exit 2; }

BUILD_DIR="$(mktemp -d "${TMPDIR:-/tmp}/graphi_sanitize_unit.XXXXXX")"
if [ "${KEEP:-0}" = 1 ]; then
  echo "sanitize_unit_tests: building in $BUILD_DIR (kept)"
else
  trap 'rm -rf "$BUILD_DIR"' EXIT
fi

# Every report is an error: stop at the first one, with its stack.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# second_deadlock_stack: lock-order reports show both acquisitions.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

# ThreadSanitizer maps its shadow memory at fixed addresses. On kernels with more
# mmap randomisation than GCC 12's TSan expects (vm.mmap_rnd_bits above 28, e.g. the
# default 32 of recent Ubuntu kernels) every TSan binary dies at start with
# "FATAL: ThreadSanitizer: unexpected memory mapping"; newer runtimes re-exec
# themselves without ASLR, GCC 12's does not. The documented workaround is to run
# without address-space randomisation: setarch -R. A probe decides.
tsan_runner() {
  local probe="$BUILD_DIR/tsan_probe"
  printf 'int main() { return 0; }\n' | "$CXX" -x c++ -fsanitize=thread - -o "$probe"
  if "$probe" >"$probe.out" 2>&1; then
    return 0
  fi
  if grep -q 'unexpected memory mapping' "$probe.out" && setarch "$(uname -m)" -R "$probe" >/dev/null 2>&1; then
    echo "sanitize_unit_tests: TSan needs ASLR off on this kernel; running the tests under setarch -R" >&2
    RUNNER=(setarch "$(uname -m)" -R)
    return 0
  fi
  echo "sanitize_unit_tests: a trivial ThreadSanitizer binary does not run here:" >&2
  cat "$probe.out" >&2
  return 1
}

run_mode() {
  local mode="$1" dir="$BUILD_DIR/$1" flags=()
  case "$mode" in
    asan) flags=(-fsanitize=address,undefined -fno-sanitize-recover=all) ;;
    tsan) flags=(-fsanitize=thread) ;;
    *) echo "sanitize_unit_tests: unknown mode '$mode' (allowed: asan, tsan)" >&2; exit 2 ;;
  esac
  # -O1 as the plain unit tests; -g for file:line in reports.
  flags+=(-std=c++17 -O1 -g -fno-omit-frame-pointer -pthread -I.)
  RUNNER=()
  if [ "$mode" = tsan ]; then tsan_runner; fi
  mkdir -p "$dir"
  local started=$SECONDS

  # Library sources once, then each test; one translation unit per compiler process.
  local units=("${TF_FREE_SOURCES[@]}" "${TESTS[@]}")
  printf '%s\n' "${units[@]}" |
    xargs -P "$JOBS" -I{} sh -c 'src=$1; dir=$2; shift 2; obj="$dir/$(echo "$src" | tr / _).o"; exec "$@" -c "$src" -o "$obj"' \
      _ {} "$dir" "$CXX" "${flags[@]}" ||
    { echo "sanitize_unit_tests[$mode]: compiling FAILED" >&2; exit 1; }
  local lib_objects=() src
  for src in "${TF_FREE_SOURCES[@]}"; do lib_objects+=("$dir/$(echo "$src" | tr / _).o"); done
  for src in "${TESTS[@]}"; do
    local name; name="$(basename "$src" .cc)"
    "$CXX" "${flags[@]}" -o "$dir/$name" "$dir/$(echo "$src" | tr / _).o" "${lib_objects[@]}" \
      -lgtest -lgtest_main
  done
  echo "sanitize_unit_tests[$mode]: built ${#TESTS[@]} tests in $((SECONDS - started))s"

  local failed=() log
  for src in "${TESTS[@]}"; do
    local name; name="$(basename "$src" .cc)"
    mkdir -p "$dir/tmp_$name"
    log="$dir/$name.log"
    if TEST_TMPDIR="$dir/tmp_$name" GTEST_COLOR=no timeout 300 "${RUNNER[@]}" "$dir/$name" >"$log" 2>&1; then
      echo "  $mode $name: $(grep -m1 -o '\[  PASSED  \] [0-9]* tests\?' "$log" || echo passed)"
    else
      echo "  $mode $name: FAILED (exit $?); its output:" >&2
      cat "$log" >&2
      failed+=("$name")
    fi
  done
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "sanitize_unit_tests[$mode]: FAILED: ${failed[*]}" >&2
    return 1
  fi
  echo "sanitize_unit_tests[$mode]: ${#TESTS[@]} tests clean in $((SECONDS - started))s"
}

status=0
for mode in "${MODES[@]}"; do
  run_mode "$mode" || status=1
done
exit "$status"
