#!/bin/sh
echo "graphi_tf's offline Bazel build has no coverage tools (@remote_coverage_tools is a local stub)." >&2
exit 1
