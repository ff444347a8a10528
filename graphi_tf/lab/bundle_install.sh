#!/usr/bin/env bash
# Installs a `graphi-tf bundle` with no package index.
#
#   bash install.sh TARGET_DIR          (PYTHON=python3.12 bash install.sh TARGET_DIR)
#
# Checks every file the manifest lists (each part of a split wheel, then the joined wheel)
# before anything is installed, and stops with one line naming a missing or corrupt file.
# Then installs the wheels into TARGET_DIR (pip --no-index --no-deps --target: exactly the
# set the bundle chose against the target's `pip freeze`) and imports graphi_tf from there.
# Afterwards: PYTHONPATH=TARGET_DIR python3 ...  or  TARGET_DIR/bin/graphi-tf ...
set -euo pipefail
if [ "$#" -ne 1 ]; then
  echo "usage: [PYTHON=python3] bash install.sh TARGET_DIR" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="$1"
python="${PYTHON:-python3}"
stage="$(mktemp -d "${TMPDIR:-/tmp}/graphi_bundle_stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

if ! wheels="$("$python" "$here/bundle_check.py" "$here" "$stage")"; then
  echo "install.sh: nothing was installed" >&2
  exit 1
fi
mkdir -p "$target"
mapfile -t files <<<"$wheels"
"$python" -m pip install --quiet --no-index --no-deps --no-cache-dir --upgrade --target "$target" "${files[@]}"
# The import check runs outside any source checkout, so it finds the installed package.
(cd / && PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2 "$python" -c \
  'import graphi_tf, tensorflow as tf; print("installed graphi_tf", graphi_tf.__version__, "with TensorFlow", tf.__version__, "from", graphi_tf.__file__)')
echo "use it with: PYTHONPATH=$target python3 ...   or   $target/bin/graphi-tf ..."
