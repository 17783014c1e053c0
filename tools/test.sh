#!/usr/bin/env bash
# Run the test suite: lint, type check, then every tier (unit, integration, harness CLIs, real Slurm).
# Brings up the single-node Slurm cluster for the slurm tier and stops it by pid at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

ruff check polar_hpc tests tools
mypy

bash .ci/slurm.sh up
trap 'bash .ci/slurm.sh down' EXIT
export SLURM_CONF=${POLAR_SLURM_DIR:-/tmp/polar-slurm}/etc/slurm.conf

python3 -m pytest -q -p no:cacheprovider --durations=30 "$@"
