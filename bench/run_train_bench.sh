#!/usr/bin/env bash
# Builds the release kiln_train_bench, times a training step of every trainable
# example with kiln and PyTorch side by side (one workload at a time), prints
# the joined table and writes it to bench/results/train-<device>-<date>-<commit>.md.
# See bench/README.md ("Training").
#
# usage: bench/run_train_bench.sh [--device cpu|cuda] [--no-build] [--filter TEXT]
#                                 [--precision P] [--note TEXT] [--out DIR]
#   --device cuda      kiln with --target cuda, PyTorch on cuda (eager and
#                      torch.compile), and kiln on the CPU for the GPU's speed-up
#   KILN_NUM_THREADS   CPU threads for both (default: all cores)
#   KILN_BENCH_BUILD   build directory (default: build/release, built with
#                      scripts/build.sh release; a gpu-carry directory with --no-build)
#   KILN_BENCH_PYTHON  the python with torch (default: /usr/bin/python3)
#   KILN_BENCH_COMMIT  the commit to name (default: git's HEAD)
#   OMP_WAIT_POLICY    PyTorch's OpenMP idle threads (default: passive, see README)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. bench/machine_info.sh

build=1
device=cpu
filter=""
note=""
precision=fp32
out_dir="bench/results"
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift ;;
    --no-build) build=0 ;;
    --filter) filter="$2"; shift ;;
    --precision) precision="$2"; shift ;;
    --note) note="$2"; shift ;;
    --out) out_dir="$2"; shift ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
  shift
done
case "$device" in cpu | cuda) ;; *) echo "run_train_bench.sh: --device cpu or cuda" >&2; exit 2 ;; esac

threads="${KILN_NUM_THREADS:-$(nproc)}"
build_dir="${KILN_BENCH_BUILD:-$root/build/release}"
python="${KILN_BENCH_PYTHON:-/usr/bin/python3}"

if [ "$build" = 1 ]; then
  if [ "$build_dir" = "$root/build/release" ]; then
    scripts/build.sh release kiln_train_bench >&2
  else
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build_dir" -j "$(nproc)" --target kiln_train_bench >&2
  fi
fi
bench="$build_dir/bench/kiln_train_bench"
# A carried directory (scripts/gpu-roundtrip.sh prepare) has no CMakeCache.txt:
# prepare builds it with scripts/build.sh release.
if [ -f "$build_dir/CMakeCache.txt" ] &&
   ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build_dir/CMakeCache.txt"; then
  echo "run_train_bench.sh: $build_dir is not a Release build; benchmarks must be" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export KILN_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"
# As run_cpu_bench.sh: kiln's idle workers sleep; OpenMP's spin unless passive.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
load_before="$(bench_load)"

kiln_args=(--precision "$precision" --target "$device")
: >"$work/kiln.jsonl"
: >"$work/kiln-cpu.jsonl"
: >"$work/torch.jsonl"
"$bench" --list >/dev/null
status=0
# One workload at a time, kiln then PyTorch, so a change in the machine's load
# hits both sides of a row rather than one whole column.
for workload in $("$bench" --list); do
  case "$workload" in *"$filter"*) ;; *) continue ;; esac
  echo "run_train_bench.sh: $workload" >&2
  "$bench" "${kiln_args[@]}" --only "$workload" >>"$work/kiln.jsonl" || status=1
  if [ "$device" = cuda ]; then
    "$bench" --precision "$precision" --target cpu --only "$workload" >>"$work/kiln-cpu.jsonl" ||
      status=1
  fi
  "$python" bench/torch_train.py --device "$device" --threads "$threads" --only "$workload" \
    >>"$work/torch.jsonl" || status=1
done
load_after="$(bench_load)"

dirty=""
if [ -n "${KILN_BENCH_COMMIT:-}" ]; then
  commit="$KILN_BENCH_COMMIT" # the gpu-carry's commit (scripts/gpu-roundtrip.sh)
else
  commit="$(git rev-parse --short HEAD)"
  git diff --quiet HEAD -- . 2>/dev/null || dirty=" (with uncommitted changes)"
fi
date="$(date +%Y-%m-%d)"
torch_info="$(grep -m1 '"kind": "info"' "$work/torch.jsonl" || true)"
torch_version="$(echo "$torch_info" | grep -o '"version": "[^"]*"' | cut -d'"' -f4 || true)"
torch_device="$(echo "$torch_info" | grep -o '"device": "[^"]*"' | cut -d'"' -f4 || true)"
kiln_target="$(grep -m1 -o '"target": "[^"]*"' "$work/kiln.jsonl" | cut -d'"' -f4 || true)"
device_label=cpu
if [ "$device" = cuda ]; then
  device_label="$(echo "${torch_device:-cuda}" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')"
fi
{
  echo "# Training step: kiln vs PyTorch on $([ "$device" = cuda ] && echo "${torch_device:-the GPU}" || echo "the CPU"), $date"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(bench_machine)"
  [ "$device" = cuda ] && echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "${torch_device:-unknown}")"
  echo "- CPU threads: $threads for both (KILN_NUM_THREADS, torch.set_num_threads)"
  echo "- load average (1/5/15 min): $load_before before, $load_after after"
  echo "- kiln: commit $commit$dirty, release build, target $kiln_target, precision $precision"
  echo "- PyTorch: ${torch_version:-?} on ${torch_device:-?}, fp32, NCHW, OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
  echo "- a step: the batch from the host, forward, cross entropy on the logits, backward, Adam (lr 1e-3), the loss back to the host; parameters and optimizer state stay where the step runs (kiln: bound to the compiled step; on a GPU the next batch is copied from pinned memory on a copy stream during the step)"
  [ -n "$note" ] && echo "- note: $note"
  true
} >"$work/header.md"

report_args=(--header "$work/header.md")
[ "$device" = cuda ] && report_args+=(--kiln-cpu "$work/kiln-cpu.jsonl")
"$python" bench/train_report.py "${report_args[@]}" "$work/kiln.jsonl" "$work/torch.jsonl" \
  >"$work/report.md"
bench_write_result "$work/report.md" "$out_dir" "train-$device_label-$date-$commit"
exit $status
