#!/bin/bash
# The serving run of ../serving_lockstep_xeon106_2026-12-07/run.sh with twice the phases:
# --lockstep 8 --repeats 3 (24 phases per arm and client count).
# Usage: run.sh OUT_DIR   (from the repository root, venv active, nothing else running)
LOCKSTEP=8 REPEATS=3 exec bash "$(dirname "$0")/../serving_lockstep_xeon106_2026-12-07/run.sh" "$@"
