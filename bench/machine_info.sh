# shellcheck shell=bash
# Sourced by the bench scripts (run_cpu_bench.sh, run_train_bench.sh, run_dist_bench.sh): the
# machine and its load, as every results file records them, and where the file goes.

# The 1, 5 and 15 minute load averages: a results file gives them before and after its runs.
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# The CPU's model, its cores (and logical CPUs) and the memory. nproc would count
# OMP_NUM_THREADS, which the scripts set for the libraries, instead of the cores.
bench_machine() {
  local cpu cores
  cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
  echo "$cpu, $cores cores online ($(grep -c ^processor /proc/cpuinfo) logical CPUs)," \
       "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
}

# Copies the report REPORT to DIR/NAME.md (DIR/NAME-2.md, -3, ... when taken: a second run
# at one commit keeps the first), prints it and says where it went.
bench_write_result() {
  local report="$1" dir="$2" name="$3" out n=2
  mkdir -p "$dir"
  out="$dir/$name.md"
  while [ -e "$out" ]; do
    out="$dir/$name-$n.md"
    n=$((n + 1))
  done
  cp "$report" "$out"
  cat "$out"
  echo
  echo "written to $out" >&2
}
