#!/usr/bin/env bash
# Run the test suite: lint, type check (the package, then tools/), then every tier (unit, integration, harness
# CLIs, real Slurm).
# Brings up the single-node Slurm cluster for the slurm tier and stops it by pid at the end.
#   bash tools/test.sh                  # everything: the fast tier first, then the slow one; the slurm tier runs
#                                       # beside them (it mostly waits)
#   bash tools/test.sh --fast [ARGS]    # the inner loop (under 3 minutes): ruff, then the fast tier (-m "not slow");
#                                       # no Slurm, no mypy; ARGS go to its pytest
#   bash tools/test.sh -m "not slow"    # any other arguments go to one pytest as they are (with Slurm up)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fast" ]; then
  shift
  ruff check polar_hpc tests tools
  exec python3 -m pytest -q -p no:cacheprovider --durations=15 -m "not slow" "$@"
fi

ruff check polar_hpc tests tools
mypy
mypy tools   # the benchmarks and scripts: not a package, checked on their own

bash .ci/slurm.sh up
slurm_pid=""
cleanup() {
  [ -z "$slurm_pid" ] || kill "$slurm_pid" 2>/dev/null || true
  bash .ci/slurm.sh down
}
trap cleanup EXIT
export SLURM_CONF=${POLAR_SLURM_DIR:-/tmp/polar-slurm}/etc/slurm.conf
PYTEST=(python3 -m pytest -q -p no:cacheprovider)

if [ $# -gt 0 ]; then
  "${PYTEST[@]}" --durations=30 "$@"
  exit
fi

# The slurm tier's tests wait on the scheduler and on sessions that sleep; beside the rest they cost little CPU
# and take ~10 minutes off the wall time. Its output follows the rest's.
slurm_log=$(mktemp)
"${PYTEST[@]}" --durations=15 -m slurm > "$slurm_log" 2>&1 &
slurm_pid=$!
# The fast tier first (a first stage): when it fails, the slow tier is skipped.
rest=0
"${PYTEST[@]}" --durations=15 -m "not slow" || rest=$?
if [ "$rest" = 0 ]; then
  "${PYTEST[@]}" --durations=30 -m "slow and not slurm" || rest=$?
else
  echo "the fast tier failed (rc=$rest): the slow tier is skipped"
fi
slurm=0
wait "$slurm_pid" || slurm=$?
slurm_pid=""
echo "---------------------------------- slurm tier ----------------------------------"
cat "$slurm_log"
rm -f "$slurm_log"
echo "tiers: rest rc=$rest, slurm rc=$slurm"
[ "$rest" = 0 ] && [ "$slurm" = 0 ]
