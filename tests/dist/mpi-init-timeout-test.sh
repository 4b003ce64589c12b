#!/usr/bin/env bash
# MPI_Init bounded by the collective timeout (docs/distributed.md, "Faults"): the job's second
# process is `sleep`, which never joins MPI, so the first one's MPI_Init_thread waits for it
# until the sleep ends. The plugin's watchdog must end the first process after the timeout
# (KILN_DIST_TIMEOUT is 2 s here, so its 10 s floor), naming MPI_Init_thread and the timeout,
# long before the sleep's 90 s.
#
#   mpi-init-timeout-test.sh PROBE     (dist_fault_probe: it opens the host communicator first)
#
# Exits 77 (ctest: skipped), saying why, where mpirun is missing.
set -euo pipefail
probe="$1"
if ! command -v mpirun >/dev/null; then
  echo "SKIPPED: mpirun is not installed (Debian: openmpi-bin, which scripts/setup.sh installs)"
  exit 77
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
start=$(date +%s)
status=0
KILN_DIST_TIMEOUT=2 timeout 100 mpirun --allow-run-as-root --oversubscribe \
  --mca btl_vader_single_copy_mechanism none \
  -np 1 "$probe" exit : -np 1 sleep 90 >"$log" 2>&1 || status=$?
elapsed=$(($(date +%s) - start))
cat "$log"
if ! grep -q "kiln: error: MPI_Init_thread did not return within 10 s (the collective timeout" "$log"; then
  echo "FAIL: no watchdog error from the process waiting in MPI_Init_thread"
  exit 1
fi
# A bound on a hang, not a measurement: without the watchdog the job lasts the sleep's 90 s.
if [ "$status" -eq 124 ] || [ "$elapsed" -ge 60 ]; then
  echo "FAIL: the job took ${elapsed} s (status ${status}): MPI_Init_thread was not cut short"
  exit 1
fi
echo "PASS: MPI_Init_thread ended by the watchdog, the job over in ${elapsed} s"
