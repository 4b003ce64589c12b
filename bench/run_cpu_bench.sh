#!/usr/bin/env bash
# Builds the release kiln_cpu_bench, times kiln and PyTorch side by side on the
# same workloads with the same thread count, prints the joined table and writes
# it to bench/results/cpu-<date>-<commit>.md. See bench/README.md.
#
# usage: bench/run_cpu_bench.sh [--no-build] [--filter TEXT] [--note TEXT]
#   KILN_NUM_THREADS   threads for both (default: all cores)
#   KILN_BENCH_BUILD   build directory (default: build/release, built with
#                      scripts/build.sh release; any other is configured Release)
#   KILN_BENCH_PYTHON  the python with torch (default: /usr/bin/python3)
#   OMP_WAIT_POLICY    PyTorch's OpenMP idle threads (default: passive, see README)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. bench/machine_info.sh

build=1
filter=""
note=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --filter) filter="$2"; shift ;;
    --note) note="$2"; shift ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
  esac
  shift
done

threads="${KILN_NUM_THREADS:-$(nproc)}"
build_dir="${KILN_BENCH_BUILD:-$root/build/release}"
python="${KILN_BENCH_PYTHON:-/usr/bin/python3}"

if [ "$build" = 1 ]; then
  if [ "$build_dir" = "$root/build/release" ]; then
    scripts/build.sh release kiln_cpu_bench >&2
  else
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build_dir" -j "$(nproc)" --target kiln_cpu_bench >&2
  fi
fi
bench="$build_dir/bench/kiln_cpu_bench"
if ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build_dir/CMakeCache.txt"; then
  echo "run_cpu_bench.sh: $build_dir is not a Release build; benchmarks must be" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export KILN_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"
# kiln's idle workers sleep on a condition variable; OpenMP's spin by default,
# and on a shared machine spinning threads lose their core (or the CPU quota)
# to other processes and PyTorch slows down a hundredfold. Passive is the
# like-for-like setting; export OMP_WAIT_POLICY=active to measure the other.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE exist for old OpenBLAS builds and slow 0.3.21 down:
# the baselines run with OpenBLAS's own choice, which the info record names.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
load_before="$(bench_load)"
"$bench" --list-json >"$work/workloads.jsonl"

# One workload at a time, kiln then PyTorch, so a change in the machine's load
# hits both sides of a row rather than one whole column.
"$bench" --sections info --filter none >"$work/kiln.jsonl"
"$python" bench/torch_cpu.py --threads "$threads" --workloads "$work/workloads.jsonl" \
  --only none >"$work/torch.jsonl"
for workload in $("$bench" --list); do
  case "$workload" in *"$filter"*) ;; *) continue ;; esac
  echo "run_cpu_bench.sh: $workload" >&2
  "$bench" --sections matmul,conv,models --only "$workload" | grep -v '"kind": "info"' \
    >>"$work/kiln.jsonl" || true
  "$python" bench/torch_cpu.py --threads "$threads" --workloads "$work/workloads.jsonl" \
    --only "$workload" |
    grep -v '"kind": "info"' >>"$work/torch.jsonl" || true
done
echo "run_cpu_bench.sh: compile time and memory of the example models" >&2
"$bench" --sections compile --filter "$filter" | grep -v '"kind": "info"' >>"$work/kiln.jsonl" || true
load_after="$(bench_load)"

commit="$(git rev-parse --short HEAD)"
dirty=""
git diff --quiet HEAD -- . 2>/dev/null || dirty=" (with uncommitted changes)"
date="$(date +%Y-%m-%d)"
torch_version="$("$python" -c 'import torch; print(torch.__version__)')"
kiln_target="$(grep -o '"target": "[^"]*"' "$work/kiln.jsonl" | head -1 | cut -d'"' -f4)"
{
  echo "# kiln vs PyTorch on the CPU, $date"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(bench_machine)"
  echo "- threads: $threads for both (KILN_NUM_THREADS, torch.set_num_threads)"
  echo "- load average (1/5/15 min): $load_before before, $load_after after"
  echo "- kiln: commit $commit$dirty, release build, target $kiln_target"
  echo "- PyTorch: $torch_version (eager, torch.no_grad(), fp32, NCHW), OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
  [ -n "$note" ] && echo "- note: $note"
  true
} >"$work/header.md"

"$python" bench/cpu_report.py --header "$work/header.md" "$work/kiln.jsonl" "$work/torch.jsonl" \
  >"$work/report.md"
bench_write_result "$work/report.md" bench/results "cpu-$date-$commit"
