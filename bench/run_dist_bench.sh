#!/usr/bin/env bash
# Data-parallel training on the CPU: `kiln train` throughput for the MLP and the CNN as
# 1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1 thread and 3 ranks x 1 thread (mpirun),
# the scaling efficiency, the gradient bucket caps swept on 2 ranks, and the share of all-reduce
# time hidden behind compute (from the Chrome trace, where kiln train writes one). Prints the
# tables and writes bench/results/dist-cpu-<date>-<commit>.md. See bench/README.md
# ("Data parallel").
#
# usage: bench/run_dist_bench.sh [--no-build] [--recipes "mlp cnn"] [--windows N]
#                                [--buckets "0.001 0.01 0.05 0.25"] [--bind] [--quick]
#                                [--note TEXT] [--out DIR]
#   --windows N   measured windows (epochs) after one warm-up epoch (default 5)
#   --buckets L   bucket caps in MiB swept on 2 ranks, each as both --first-bucket-mib and
#                 --bucket-mib ("" for none)
#   --bind        bind each rank to a core (mpirun --bind-to core; taskset for 1 rank x 1
#                 thread) where there are enough cores: steadier on a quiet machine; on a shared
#                 one a bound rank cannot move away from another job, so the default is unbound
#   --quick       small epochs, 2 windows, one bucket cap: checks the script, measures nothing
#   KILN_BENCH_BUILD  build directory (default: build/release, built with scripts/build.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. bench/machine_info.sh

build=1
recipes="mlp cnn"
windows=5
buckets="0.001 0.01 0.05 0.25"
quick=0
bind=0
note=""
out_dir="bench/results"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --recipes) recipes="$2"; shift ;;
    --windows) windows="$2"; shift ;;
    --buckets) buckets="$2"; shift ;;
    --quick) quick=1 ;;
    --bind) bind=1 ;;
    --note) note="$2"; shift ;;
    --out) out_dir="$2"; shift ;;
    *) sed -n '2,19p' "$0" >&2; exit 2 ;;
  esac
  shift
done
case "$windows" in '' | *[!0-9]* | 0) echo "run_dist_bench.sh: --windows expects N >= 1" >&2; exit 2 ;; esac
if [ "$quick" = 1 ]; then
  windows=2
  buckets="${buckets%% *}"
fi

build_dir="${KILN_BENCH_BUILD:-$root/build/release}"
python=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist
if [ "$build" = 1 ]; then
  scripts/build.sh release kiln_cli kiln_mpi >&2
fi
kiln="$build_dir/kiln"
if ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build_dir/CMakeCache.txt"; then
  echo "run_dist_bench.sh: $build_dir is not a Release build; benchmarks must be" >&2
  exit 1
fi
command -v mpirun >/dev/null ||
  { echo "run_dist_bench.sh: mpirun is not installed (Debian: openmpi-bin)" >&2; exit 1; }
[ -e "$data/train-images-idx3-ubyte.gz" ] ||
  { echo "run_dist_bench.sh: Fashion-MNIST is not in $data (Debian: dataset-fashion-mnist)" >&2; exit 1; }

# Examples a window (an epoch): about a second of 1 rank x 1 thread on this machine's cores.
declare -A limit=([mlp]=60000 [cnn]=2560)
[ "$quick" = 1 ] && limit=([mlp]=3200 [cnn]=320)
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
# --bind: this process's first core, for pinning 1 rank x 1 thread as mpirun binds a rank.
first_cpu=""
[ "$bind" = 1 ] && first_cpu="$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//; s/[-,].*//')"
mpirun_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root) # Open MPI refuses root without it
# No single-copy (CMA) transfers: containers without ptrace rights refuse them.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# The libraries' own threads stay out of the count: kiln's pool is the only one.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
trace_flag=0
# kiln train --profile=FILE writes rank 0's Chrome trace, with the communication track.
case "$("$kiln" train --help)" in *"--profile[=FILE]"*) trace_flag=1 ;; esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
: >"$work/runs.jsonl"
status=0

# launch RANKS THREADS LOG KILN_ARGS...: kiln train as one process or as ranks under mpirun,
# each rank with THREADS threads; prints whether each rank was bound to a core.
launch() {
  local ranks="$1" threads="$2" log="$3"
  shift 3
  local rc=0
  if [ "$ranks" = 1 ]; then
    if [ "$threads" = 1 ] && [ -n "$first_cpu" ]; then
      echo true
      KILN_NUM_THREADS=1 taskset -c "$first_cpu" "$kiln" "$@" >"$log" 2>&1 || rc=$?
    else
      echo false
      KILN_NUM_THREADS="$threads" "$kiln" "$@" >"$log" 2>&1 || rc=$?
    fi
  else
    local binding=(--bind-to none)
    if [ "$bind" = 1 ] && [ "$ranks" -le "$cores" ]; then binding=(--bind-to core --map-by core); fi
    [ "${binding[1]}" = core ] && echo true || echo false
    mpirun "${mpirun_flags[@]}" "${binding[@]}" -x KILN_NUM_THREADS="$threads" -x OMP_NUM_THREADS \
      -x OPENBLAS_NUM_THREADS -np "$ranks" "$kiln" "$@" >"$log" 2>&1 || rc=$?
  fi
  return "$rc"
}

# run ROLE RECIPE RANKS THREADS [FIRST_MIB BUCKET_MIB]: the timed run, then (several ranks,
# where kiln train has --profile=FILE) a short traced one: profiling every kernel would slow the
# timed windows down.
run() {
  local role="$1" recipe="$2" ranks="$3" threads="$4" first="${5:-}" rest="${6:-}"
  local name="$recipe-${ranks}x$threads${first:+-b$first-$rest}"
  local args=(train "$recipe" --target cpu --test-limit 64 --limit "${limit[$recipe]}")
  [ -n "$first" ] && args+=(--first-bucket-mib "$first" --bucket-mib "$rest")
  echo "run_dist_bench.sh: $name" >&2
  local rc=0 bound
  bound="$(launch "$ranks" "$threads" "$work/$name.log" "${args[@]}" --epochs "$((windows + 1))")" ||
    rc=$?
  [ "$rc" = 0 ] || { status=1; echo "run_dist_bench.sh: $name failed (exit $rc):" >&2; tail -3 "$work/$name.log" >&2; }
  local traces="" reason=""
  if [ "$trace_flag" = 0 ]; then
    reason="kiln train writes no trace at this commit (no --profile=FILE)"
  elif [ "$ranks" -gt 1 ] && [ "$rc" = 0 ]; then
    launch "$ranks" "$threads" "$work/$name.trace.log" "${args[@]}" --epochs 2 \
      --profile="$work/$name.trace.json" >/dev/null || reason="the traced run failed (exit $?)"
    traces="$(ls "$work/$name".trace*.json 2>/dev/null | tr '\n' ' ')"
  fi
  ROLE="$role" RECIPE="$recipe" RANKS="$ranks" THREADS="$threads" FIRST="$first" REST="$rest" \
    LOG="$work/$name.log" RC="$rc" BOUND="$bound" TRACES="$traces" REASON="$reason" "$python" -c '
import json, os
e = os.environ
mib = lambda v: float(v) if v else None
print(json.dumps({"role": e["ROLE"], "recipe": e["RECIPE"], "ranks": int(e["RANKS"]),
                  "threads": int(e["THREADS"]), "first_mib": mib(e["FIRST"]),
                  "bucket_mib": mib(e["REST"]), "log": e["LOG"], "status": int(e["RC"]),
                  "bound": e["BOUND"] == "true", "traces": e["TRACES"].split(),
                  "trace_reason": e["REASON"] or None}))' >>"$work/runs.jsonl"
}

load_before="$(bench_load)"
for recipe in $recipes; do
  [ -n "${limit[$recipe]:-}" ] ||
    { echo "run_dist_bench.sh: no window size for recipe '$recipe' (mlp, cnn)" >&2; exit 2; }
  # One recipe at a time, every configuration in turn, so a change in the machine's load hits
  # a recipe's rows together rather than one configuration across recipes.
  run scaling "$recipe" 1 1
  run scaling "$recipe" 1 2
  run scaling "$recipe" 2 1
  run scaling "$recipe" 3 1
  for cap in $buckets; do
    run sweep "$recipe" 2 1 "$cap" "$cap"
  done
done
load_after="$(bench_load)"

commit="$(git rev-parse --short HEAD)"
dirty=""
git diff --quiet HEAD -- . 2>/dev/null || dirty=" (with uncommitted changes)"
date="$(date +%Y-%m-%d)"
settings="global batch 64 (each recipe's default; 3 ranks: shards of 21, 21 and 22), one warm-up"
settings+=" window then $windows measured, a window = one epoch of the first examples (mlp"
settings+=" ${limit[mlp]}, cnn ${limit[cnn]}), --target cpu, fp32, each recipe's optimizer;"
settings+=" KILN_NUM_THREADS per rank as the configuration says, ranks under mpirun; "
if [ "$bind" = 1 ]; then
  settings+="--bind: each rank bound to a core where there are enough cores (1 rank x 1 thread"
  settings+=" pinned with taskset), unbound when oversubscribed"
else
  settings+="no rank or thread bound to a core (the scheduler places them around other load)"
fi
[ "$quick" = 1 ] && settings+="; --quick: too short to measure anything"
WHEN="$(date -u '+%Y-%m-%d %H:%M UTC')" DATE="$date" CORES="$cores" \
  MACHINE="$(bench_machine), $(mpirun --version | head -1)" \
  COMMIT="commit $commit$dirty, release build" LOAD="$load_before before, $load_after after" \
  SETTINGS="$settings" NOTE="$note" "$python" -c '
import json, os
e = os.environ
print(json.dumps({"when": e["WHEN"], "date": e["DATE"], "cores": int(e["CORES"]),
                  "machine": e["MACHINE"], "commit": e["COMMIT"], "load": e["LOAD"],
                  "settings": e["SETTINGS"], "note": e["NOTE"]}))' >"$work/header.json"

"$python" bench/dist_report.py --warmup 1 --header-json "$work/header.json" "$work/runs.jsonl" \
  >"$work/report.md" || status=1
bench_write_result "$work/report.md" "$out_dir" "dist-cpu-$date-$commit"
exit $status
