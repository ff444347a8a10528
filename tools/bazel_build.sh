#!/usr/bin/env bash
# Builds graphi_tf's native library with Bazel, copies it into a directory and
# smoke-tests the copy. Installs nothing (Bazel, the Python with TensorFlow
# and pybind11 must be there already; see README.md, "Building with Bazel").
#
#   tools/bazel_build.sh DEST_DIR [BAZEL_BUILD_ARGS...]
#
#   DEST_DIR          where _graphi_tf<EXT_SUFFIX> and _build_info.py go; use
#                     graphi_tf to replace the in-place (pip -e) build.
#   BAZEL_BUILD_ARGS  passed to `bazel build`, e.g. --jobs=2
#
# Environment:
#   PYTHON  the Python whose TensorFlow to build against and to smoke-test
#           with (default: python3 on PATH); handed to Bazel as
#           --repo_env=PYTHON_BIN_PATH.
#   BAZEL   the Bazel command (default: bazel; e.g. bazel-4 or bazelisk).
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
dest=$1
shift

cd "$(dirname "$0")/.."
repo=$PWD
bazel=${BAZEL:-bazel}
python=${PYTHON:-python3}
python=$(command -v "$python") || { echo "error: no Python '${PYTHON:-python3}' on PATH" >&2; exit 1; }
command -v "${bazel%% *}" >/dev/null || { echo "error: '$bazel' not found (apt-get install bazel-bootstrap)" >&2; exit 1; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
run() { echo "+ $*"; "$@"; }

bazel_args=(--repo_env="PYTHON_BIN_PATH=$python" "$@")

echo "== graphi_tf Bazel build (workspace $repo, Python $python)"
t0=$(now)
run $bazel build "${bazel_args[@]}" //:graphi_tf
echo "== bazel build: $(since "$t0") s"

ext_suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
bin_dir=$($bazel info "${bazel_args[@]}" bazel-bin 2>/dev/null)
library="$bin_dir/_graphi_tf$ext_suffix"
build_info="$bin_dir/_build_info.py"
for f in "$library" "$build_info"; do
  [ -f "$f" ] || { echo "error: $f was not built" >&2; exit 1; }
done

mkdir -p "$dest"
target="$dest/_graphi_tf$ext_suffix"
[ -e "$target" ] && echo "   (replacing $target)"
run install -m 0755 "$library" "$target"
run install -m 0644 "$build_info" "$dest/_build_info.py"

t1=$(now)
run "$python" tests/bazel/smoke_check.py "$target"
echo "== smoke test: $(since "$t1") s"
echo "== done in $(since "$t0") s: $target (and $dest/_build_info.py)"
