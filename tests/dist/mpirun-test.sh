#!/usr/bin/env bash
# Runs a dist test program under mpirun (tests/CMakeLists.txt registers each use).
#
#   mpirun-test.sh NP PROGRAM [ARGS...]           every rank must succeed
#   mpirun-test.sh --fault NP PROGRAM SCENARIO    NP - 1 ranks must print a PASS line
#                                                 (dist_fault_probe: one rank misbehaves)
#
# Exits 77 (ctest: skipped), saying why, where mpirun is missing. The job runs under
# `timeout`, so even a broken fault check cannot hang the test command.
set -euo pipefail
fault=0
if [ "${1:-}" = "--fault" ]; then
  fault=1
  shift
fi
np="$1"
shift
if ! command -v mpirun >/dev/null; then
  echo "SKIPPED: mpirun is not installed (Debian: openmpi-bin, which scripts/setup.sh installs)"
  exit 77
fi
# No single-copy (CMA) transfers between ranks: containers without ptrace rights refuse them,
# and the test buffers are small.
args=(--allow-run-as-root --oversubscribe -np "$np" --mca btl_vader_single_copy_mechanism none)
if [ "$fault" = 1 ]; then
  # Open MPI ends the whole job as soon as one rank exits early or with an error; the
  # survivors must instead live to report the missing rank themselves.
  args+=(--mca orte_abort_on_non_zero_status 0 --mca orte_allowed_exit_without_sync 1)
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
timeout --kill-after=5 90 mpirun "${args[@]}" "$@" >"$log" 2>&1 || status=$?
cat "$log"
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
  echo "mpirun-test: FAIL: the job did not finish within 90 s"
  exit 1
fi
if [ "$fault" = 0 ]; then
  [ "$status" = 0 ] || echo "mpirun-test: FAIL: mpirun exited with $status"
  exit "$status"
fi
passes="$(grep -c '^kiln-dist-probe: rank [0-9]*: PASS' "$log" || true)"
if grep -q '^kiln-dist-probe: rank [0-9]*: FAIL' "$log" || [ "$passes" -lt $((np - 1)) ]; then
  echo "mpirun-test: FAIL: expected $((np - 1)) surviving ranks to report the fault, $passes did"
  exit 1
fi
echo "mpirun-test: $passes ranks reported the fault as expected"
