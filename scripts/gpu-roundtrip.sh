#!/usr/bin/env bash
# The GPU round trip: build here, carry the binaries to a machine with a GPU
# (CUDA driver and toolkit, PyTorch, no LLVM, no internet), run the gpu tests
# and the GPU benchmarks there in one go, and bring the results back into
# bench/results/. See bench/README.md ("The GPU round trip").
#
# usage: scripts/gpu-roundtrip.sh prepare          here: build, stage build/gpu-carry
#        scripts/gpu-roundtrip.sh remote [--quick] [--steps a,b]
#                                                  there, from the repository root; steps
#                                                  (default all): smi,libs,tests,examples,bench,torch,train,tuning,tunebench
#        scripts/gpu-roundtrip.sh collect DIR      here: copy DIR's results to bench/results
#   OUT                 remote: where logs and results go (default ./gpu-out)
#   KILN_BENCH_ARGS     remote: extra arguments of kiln_gpu_bench (e.g. a section filter)
#   KILN_GPU_TEST_FILTER remote: run only these gpu tests (a Catch2 filter, e.g. "[wgmma]")
#   KILN_EXAMPLE_ARGS   remote: extra arguments of each example's kiln run (e.g.
#                       "--wgmma --precision bf16-mixed")
#   KILN_TORCH_ARGS     remote: extra arguments of torch_gpu.py (e.g. --precision bf16-mixed)
#   KILN_BENCH_PYTHON   remote: the python with torch (default python3, else /usr/bin/python3)
#   KILN_TRAIN_ARGS     remote: extra arguments of run_train_bench.sh (e.g. --filter cnn)
#   KILN_TUNE_BENCH_ONLY  remote: workloads of kiln_tune_bench --target cuda (default two)
#   KILN_STEP_TIMEOUT   remote: seconds each step may take (default 900)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

carry=build/gpu-carry
carry_limit_mib=60
# What runs on the GPU machine, relative to the build directory (and to $carry).
carried_files=(libkiln.so libkiln_rt.so kiln kiln-run-bundle bench/kiln_gpu_bench
  bench/kiln_train_bench bench/kiln_tune_bench tests/test_gpu)

usage() { sed -n '2,16p' "$0" >&2; exit 2; }

prepare() {
  set -e
  scripts/setup.sh
  local targets=(kiln_cli kiln-run-bundle kiln_gpu_bench kiln_train_bench kiln_tune_bench
    kiln_example_models fashion_mnist_cnn)
  # test_gpu exists once the CUDA runtime's tests do; build it whenever it does.
  scripts/build.sh release kiln_cli >/dev/null
  if ninja -C build/release -t targets all 2>/dev/null | grep -q '^test_gpu:'; then
    targets+=(test_gpu)
  else
    echo "gpu-roundtrip: note: no test_gpu target in this tree; the remote runs no gpu tests" >&2
  fi
  scripts/build.sh release "${targets[@]}"

  rm -rf "$carry"
  mkdir -p "$carry"
  for file in "${carried_files[@]}"; do
    [ -e "build/release/$file" ] || continue
    mkdir -p "$carry/$(dirname "$file")"
    cp -p "build/release/$file" "$carry/$file"
    # Symbols are not needed to run; LLVM inside libkiln.so makes them big.
    strip --strip-unneeded "$carry/$file"
  done
  # The tuning database's SQLite is a Debian library the GPU machine may lack:
  # it travels beside libkiln_rt.so, which remote puts on LD_LIBRARY_PATH.
  local sqlite
  sqlite="$(ldd build/release/libkiln_rt.so | awk '/libsqlite3/ {print $3}')"
  [ -n "$sqlite" ] && cp -L "$sqlite" "$carry/$(basename "$sqlite")"
  # ctest's files name the build directory by its absolute path; remote
  # rewrites them for wherever the checkout lives there.
  (cd build/release && find . -name CTestTestfile.cmake -print0 |
     xargs -0 -I{} cp --parents {} "$root/$carry/")
  echo "$root/build/release" >"$carry/build-dir.txt"
  echo "$root" >"$carry/source-dir.txt"
  local commit
  commit="$(git rev-parse --short HEAD)"
  git diff --quiet HEAD -- . 2>/dev/null || commit="$commit-dirty"
  echo "$commit" >"$carry/commit.txt"

  echo "gpu-roundtrip: staged in $carry (commit $commit):"
  (cd "$carry" && du -ab . | sort -k2 | awk '$2 != "." && !/CTestTestfile/ {printf "  %8.2f MiB  %s\n", $1 / 1048576, $2}')
  echo "  shared libraries the binaries need there:"
  readelf -d "$carry/libkiln.so" "$carry/kiln" 2>/dev/null | awk '/NEEDED/ {print "   ", $NF}' | sort -u
  echo "  newest glibc symbol version needed: $(objdump -T "$carry"/libkiln*.so "$carry/kiln" 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  local rpath
  rpath="$(readelf -d "$carry/bench/kiln_gpu_bench" | grep -E 'RUNPATH|RPATH' || true)"
  echo "  kiln_gpu_bench's run path: ${rpath:-none}"
  case "$rpath" in *'$ORIGIN'*) ;; *) echo "gpu-roundtrip: warning: the run path is absolute; remote sets LD_LIBRARY_PATH" >&2 ;; esac
  local bytes
  bytes="$(du -sb "$carry" | cut -f1)"
  awk -v b="$bytes" -v limit="$carry_limit_mib" -v dir="$carry" \
    'BEGIN {printf "gpu-roundtrip: %.1f MiB to carry (limit %d MiB): carry \"%s\"\n", b / 1048576, limit, dir}'
  if [ "$bytes" -gt $((carry_limit_mib * 1048576)) ]; then
    echo "gpu-roundtrip: error: $carry is over $carry_limit_mib MiB" >&2
    exit 1
  fi
}

# ---- remote -----------------------------------------------------------------

declare -a step_names=() step_status=() step_logs=()

# run_step NAME LOG COMMAND...: runs the command with its output in $OUT/LOG
# (and on the terminal), records its exit status, and never stops the script.
run_step() {
  local name="$1" log="$OUT/$2"
  shift 2
  echo "==== $name: $*" | tee -a "$OUT/roundtrip.log"
  # Through bash, so a step may be one of this script's (exported) functions.
  timeout "${KILN_STEP_TIMEOUT:-900}" bash -c '"$@"' bash "$@" >"$log" 2>&1
  local status=$?
  tail -n 40 "$log"
  echo "==== $name: exit $status" | tee -a "$OUT/roundtrip.log"
  step_names+=("$name")
  step_status+=("$status")
  step_logs+=("$(basename "$log")")
}

# ctest's files hold the absolute paths of the machine that built them.
rewrite_ctest_paths() {
  local old_build old_source
  old_build="$(cat "$build/build-dir.txt")"
  old_source="$(cat "$build/source-dir.txt")"
  find "$build" -name CTestTestfile.cmake -print0 |
    xargs -0 sed -i -e "s|$old_build|$root/$build|g" -e "s|$old_source|$root|g"
}

run_gpu_tests() {
  if [ ! -x "$build/tests/test_gpu" ]; then
    echo "no tests/test_gpu was carried: this tree has no gpu tests yet"
    return 1
  fi
  if [ -n "${KILN_GPU_TEST_FILTER:-}" ]; then
    # A short session's first look: only the named tests (a Catch2 filter, e.g. "[wgmma]").
    "$build/tests/test_gpu" "$KILN_GPU_TEST_FILTER"
  elif command -v ctest >/dev/null; then
    (cd "$build" && ctest -L gpu -V)
  else
    echo "no ctest on this machine: running tests/test_gpu directly"
    "$build/tests/test_gpu"
  fi
}

run_examples() {
  local status=0 name
  local names
  names="$("$build/kiln" run --help | grep -oE 'example:[a-z0-9_]+' | cut -d: -f2 | sort -u)"
  [ -n "$names" ] || names="cnn mlp lstm resnet transformer vgg"
  # shellcheck disable=SC2206 # KILN_EXAMPLE_ARGS is a list of words
  local extra=(${KILN_EXAMPLE_ARGS:-})
  for name in $names; do
    echo "---- kiln run example:$name --target cuda --check ${extra[*]}"
    "$build/kiln" run "example:$name" --target cuda --check "${extra[@]}" ||
      { echo "exit $?"; status=1; }
  done
  return $status
}

# Autotuning and AOT on the GPU: kiln tune on cuda (device-event timing and
# the cuDNN candidate), the records replayed by kiln run, and a GPU bundle
# written there (ptxas from the toolkit) and loaded by kiln-run-bundle, which
# links kiln_rt alone.
run_tuning() {
  local db="$OUT/tuning.sqlite" status=0
  rm -f "$db"
  echo "---- kiln tune example:cnn --target cuda"
  "$build/kiln" tune example:cnn --target cuda --budget 60s --db "$db" \
    --csv "$OUT/tune-cnn-cuda.csv" --svg "$OUT/tune-cnn-cuda.svg" || status=1
  "$build/kiln" tune-db ls --db "$db" || status=1
  echo "---- kiln run example:cnn --target cuda --check --tuning replay"
  "$build/kiln" run example:cnn --target cuda --check --tuning replay --tuning-db "$db" || status=1
  echo "---- kiln aot example:cnn --target cuda (this GPU's architecture and sm_80)"
  local arch
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d . | sed 's/^/sm_/')"
  [ "$arch" = sm_90 ] && arch=sm_90a
  "$build/kiln" aot example:cnn --target cuda --arch "sm_80,$arch" --embed-params \
    --tuning-db "$db" -o "$OUT/cnn-cuda.kiln" || status=1
  "$build/kiln" bundle-info "$OUT/cnn-cuda.kiln" || status=1
  "$build/kiln-run-bundle" "$OUT/cnn-cuda.kiln" || status=1
  "$build/kiln" run "$OUT/cnn-cuda.kiln" || status=1
  rm -f "$OUT/cnn-cuda.kiln"
  return $status
}

# The tuner against an exhaustive sweep on the GPU (bf16 tensor-core GEMM and
# conv shapes); KILN_TUNE_BENCH_ONLY replaces the default choice of workloads,
# and --quick times one small GEMM once per candidate.
run_tune_bench() {
  local only="${KILN_TUNE_BENCH_ONLY:-matmul_bf16_512x768x3072,conv_bf16_vgg4_28x28x256}"
  local args=(--only "$only")
  [ "${KILN_QUICK:-0}" = 1 ] && args=(--only matmul_bf16_512x768x768 --runs 1)
  "$build/bench/kiln_tune_bench" --target cuda --out "$OUT" --sweeps "$OUT/tune-sweeps" "${args[@]}"
}

remote() {
  local quick=0 steps="smi,libs,tests,examples,bench,torch,train,tuning,tunebench"
  while [ $# -gt 0 ]; do
    case "$1" in
      --quick) quick=1 ;;
      --steps) steps="${2:?--steps needs a list}"; shift ;;
      *) usage ;;
    esac
    shift
  done
  wants() { [[ ",$steps," == *",$1,"* ]]; }
  OUT="${OUT:-$root/gpu-out}"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  build="$carry"
  [ -x "$build/kiln" ] || build=build/release
  if [ ! -x "$build/kiln" ]; then
    echo "gpu-roundtrip: neither build/gpu-carry nor build/release holds kiln: carry $carry" >&2
    exit 1
  fi
  export KILN_BENCH_COMMIT
  KILN_BENCH_COMMIT="$(cat "$build/commit.txt" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  # The binaries find kiln's libraries by run path; this also covers a build
  # directory whose run path is absolute. cuBLAS comes from the toolkit.
  local cuda_lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
  export LD_LIBRARY_PATH="$root/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -d "$cuda_lib" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cuda_lib"
  local python="${KILN_BENCH_PYTHON:-python3}"
  "$python" -c 'import torch' 2>/dev/null || python=/usr/bin/python3
  [ -f "$build/build-dir.txt" ] && rewrite_ctest_paths
  export build
  export -f run_gpu_tests run_examples run_tuning run_tune_bench
  export OUT
  : >"$OUT/roundtrip.log"

  local bench_args=(--out "$OUT") torch_args=(--device cuda --kiln "$build/kiln" --out "$OUT")
  if [ "$quick" = 1 ]; then
    bench_args+=(--quick)
    torch_args+=(--iterations 10)
  fi
  # shellcheck disable=SC2206 # KILN_BENCH_ARGS is a list of words
  bench_args+=(${KILN_BENCH_ARGS:-})
  # shellcheck disable=SC2206
  torch_args+=(${KILN_TORCH_ARGS:-})
  wants smi && run_step "nvidia-smi" nvidia-smi.log nvidia-smi
  wants libs && run_step "libraries" ldd.log bash -c "ldd '$build/kiln' '$build/bench/kiln_gpu_bench' '$build/bench/kiln_train_bench' | tee /dev/stderr | (! grep 'not found')"
  wants tests && run_step "gpu tests" ctest-gpu.log run_gpu_tests
  wants examples && run_step "examples on cuda (--check)" examples-cuda.log run_examples
  wants bench && run_step "kiln_gpu_bench" gpu-bench.log "$build/bench/kiln_gpu_bench" "${bench_args[@]}"
  wants torch && run_step "torch_gpu.py" torch-gpu.log "$python" bench/torch_gpu.py "${torch_args[@]}"
  # Training steps: kiln on cuda and on the CPU, PyTorch eager and torch.compile.
  # shellcheck disable=SC2086 # KILN_TRAIN_ARGS is a list of words
  wants train && run_step "run_train_bench.sh --device cuda" train-bench.log \
    env KILN_BENCH_BUILD="$build" KILN_BENCH_PYTHON="$python" \
    bench/run_train_bench.sh --device cuda --no-build --out "$OUT" ${KILN_TRAIN_ARGS:-}
  wants tuning && run_step "kiln tune / aot on cuda" tuning.log run_tuning
  wants tunebench && run_step "kiln_tune_bench --target cuda" tune-bench.log \
    env KILN_QUICK="$quick" bash -c run_tune_bench

  local date summary failed=0
  date="$(date -u +%Y-%m-%d)"
  summary="$OUT/gpu-roundtrip-$date-$KILN_BENCH_COMMIT.md"
  {
    echo "# kiln GPU round trip, $date"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $KILN_BENCH_COMMIT (binaries from $build)"
    echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi failed')"
    echo "- host: $(hostname), $(nproc) CPUs; $("$python" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo 'no PyTorch')"
    [ "$quick" = 1 ] && echo "- --quick: fewer sizes and runs; a smoke test, not a result"
    [ "$steps" = "smi,libs,tests,examples,bench,torch,train,tuning,tunebench" ] || echo "- steps: $steps"
    [ -n "${KILN_BENCH_ARGS:-}" ] && echo "- kiln_gpu_bench arguments: ${KILN_BENCH_ARGS}"
    [ -n "${KILN_GPU_TEST_FILTER:-}" ] && echo "- gpu tests: only ${KILN_GPU_TEST_FILTER}"
    [ -n "${KILN_EXAMPLE_ARGS:-}" ] && echo "- examples run with: ${KILN_EXAMPLE_ARGS}"
    [ -n "${KILN_TORCH_ARGS:-}" ] && echo "- torch_gpu.py arguments: ${KILN_TORCH_ARGS}"
    [ -n "${KILN_TRAIN_ARGS:-}" ] && echo "- run_train_bench.sh arguments: ${KILN_TRAIN_ARGS}"
    echo
    echo "| step | exit status | log |"
    echo "|---|---:|---|"
    for i in "${!step_names[@]}"; do
      echo "| ${step_names[$i]} | ${step_status[$i]} | \`${step_logs[$i]}\` |"
      [ "${step_status[$i]}" = 0 ] || failed=1
    done
    echo
    echo "The benchmark figures are in the gpu-*.md, e2e-*.md, train-*.md and tune-*.md files of the same run."
  } >"$summary"
  echo
  cat "$summary"
  echo "gpu-roundtrip: logs and results in $OUT"
  return $failed
}

collect() {
  local dir="${1:?usage: scripts/gpu-roundtrip.sh collect DIR}"
  mkdir -p bench/results
  local copied=0 file
  for file in "$dir"/gpu-*.md "$dir"/e2e-*.md "$dir"/train-*.md "$dir"/tune-*.md; do
    [ -e "$file" ] || continue
    cp -v "$file" bench/results/
    copied=$((copied + 1))
  done
  if [ "$copied" = 0 ]; then
    echo "gpu-roundtrip: no gpu-*.md, e2e-*.md, train-*.md or tune-*.md in $dir" >&2
    exit 1
  fi
  echo "gpu-roundtrip: $copied result file(s) in bench/results; the logs stay in $dir"
}

case "${1:-}" in
  prepare) prepare ;;
  remote) shift; remote "$@" ;;
  collect) shift; collect "$@" ;;
  *) usage ;;
esac
