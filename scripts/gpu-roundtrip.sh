#!/usr/bin/env bash
# The GPU round trip: build here, carry the binaries to a machine with a GPU
# (CUDA driver and toolkit, PyTorch, no LLVM, no internet), run the gpu tests
# and the GPU benchmarks there in one go, and bring the results back into
# bench/results/. See bench/README.md ("The GPU round trip").
#
# usage: scripts/gpu-roundtrip.sh prepare          here: build, pack build/gpu-carry/kiln-gpu.tar.xz
#        scripts/gpu-roundtrip.sh remote [--plan first-look|full] [--budget SECONDS]
#                                        [--quick] [--steps a,b]
#                                                  there, from the repository root; steps
#                                                  (default all): smi,libs,tests,examples,bench,profile,torch,train,tuning,tunebench,python,dist,dynamic
#        scripts/gpu-roundtrip.sh collect DIR      here: unpack DIR's results into bench/results
#   OUT                 remote: what comes back -- at most four files: roundtrip.log, the
#                       summary, kiln-gpu-results.tar.gz (every log and result, repacked after
#                       each step) and the log of the step running (default ./gpu-out)
#   KILN_BENCH_ARGS     remote: extra arguments of kiln_gpu_bench (e.g. a section filter)
#   KILN_GPU_TEST_FILTER remote: run only these gpu tests (Catch2 filters, e.g. "[wgmma]";
#                       ';' separates runs, each limited to KILN_GPU_TEST_PART_TIMEOUT s)
#   KILN_EXAMPLE_TIMEOUT remote: seconds each example's kiln run may take (default 600)
#   KILN_EXAMPLE_ARGS   remote: extra arguments of each example's kiln run (e.g.
#                       "--wgmma --precision bf16-mixed")
#   KILN_TORCH_ARGS     remote: extra arguments of torch_gpu.py (e.g. --precision bf16-mixed)
#   KILN_BENCH_PYTHON   remote: the python with torch (default python3, else /usr/bin/python3)
#   KILN_TRAIN_ARGS     remote: extra arguments of run_train_bench.sh (e.g. --filter cnn)
#   KILN_TUNE_BENCH_ONLY  remote: workloads of kiln_tune_bench --target cuda (default two)
#   KILN_PROFILE_FLAGS  remote: the kiln run flags whose 8192^3 GEMM kernel the profile step
#                       gives to Nsight Compute (default "--tma --persistent --wgmma")
#   KILN_STEP_TIMEOUT   remote: seconds each step may take (default 900; a plan's own caps
#                       and --budget can only shorten it)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# What travels: build/gpu-carry holds one archive of the staged binaries
# (xz: LLVM inside libkiln.so makes them big, and the device call carries at
# most 64 MiB with the working tree).
carry=build/gpu-carry
carry_archive=kiln-gpu.tar.xz
carry_limit_mib=56
# Where prepare stages the binaries, and where remote unpacks them.
stage=build/gpu-stage
# What runs on the GPU machine, relative to the build directory (and to $stage).
carried_files=(libkiln.so libkiln_rt.so libkiln_onnx.so kiln kiln-run-bundle bench/kiln_gpu_bench
  bench/kiln_train_bench bench/kiln_tune_bench bench/kiln_dynamic_bench tests/test_gpu
  libkiln_mpi.so)

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' >&2; exit 2; }

prepare() {
  set -e
  scripts/setup.sh
  local targets=(kiln_cli kiln-run-bundle kiln_gpu_bench kiln_train_bench kiln_tune_bench
    kiln_dynamic_bench
    kiln_example_models fashion_mnist_cnn)
  # test_gpu exists once the CUDA runtime's tests do; build it whenever it does.
  scripts/build.sh release kiln_cli >/dev/null
  if ninja -C build/release -t targets all 2>/dev/null | grep -q '^test_gpu:'; then
    targets+=(test_gpu)
  else
    echo "gpu-roundtrip: note: no test_gpu target in this tree; the remote runs no gpu tests" >&2
  fi
  # The MPI plugin for the dist step's ranks, where CMake found MPI here.
  ninja -C build/release -t targets all 2>/dev/null | grep -q '^kiln_mpi:' && targets+=(kiln_mpi)
  scripts/build.sh release "${targets[@]}"

  rm -rf "$stage" "$carry"
  mkdir -p "$stage" "$carry"
  for file in "${carried_files[@]}"; do
    [ -e "build/release/$file" ] || continue
    mkdir -p "$stage/$(dirname "$file")"
    # A versioned library travels once, under the SONAME the binaries ask for
    # (libkiln.so.0.1), with its plain name as a link to it.
    local soname copy="$file"
    soname="$(readelf -d "build/release/$file" 2>/dev/null | awk '/SONAME/ {gsub(/[][]/, "", $NF); print $NF}')"
    if [ -n "$soname" ] && [ "$soname" != "$(basename "$file")" ]; then
      copy="$(dirname "$file")/$soname"
      ln -sfn "$soname" "$stage/$file"
    fi
    cp -pL "build/release/$file" "$stage/$copy"
    # Symbols are not needed to run; LLVM inside libkiln.so makes them big.
    strip --strip-unneeded "$stage/$copy"
  done
  # Debian libraries the GPU machine may lack travel beside libkiln_rt.so, which remote puts
  # on LD_LIBRARY_PATH: the tuning database's SQLite, and the ONNX importer's onnx and
  # protobuf.
  local library
  for library in $(ldd build/release/libkiln_rt.so build/release/libkiln_onnx.so |
                   awk '/libsqlite3|libonnx|libprotobuf/ {print $3}' | sort -u); do
    cp -L "$library" "$stage/$(basename "$library")"
  done
  stage_dist_data
  # ctest's files name the build directory by its absolute path; remote
  # rewrites them for wherever the checkout lives there.
  (cd build/release && find . -name CTestTestfile.cmake -print0 |
     xargs -0 -I{} cp --parents {} "$root/$stage/")
  echo "$root/build/release" >"$stage/build-dir.txt"
  echo "$root" >"$stage/source-dir.txt"
  local commit
  commit="$(git rev-parse --short HEAD)"
  git diff --quiet HEAD -- . 2>/dev/null || commit="$commit-dirty"
  echo "$commit" >"$stage/commit.txt"
  stage_python

  echo "gpu-roundtrip: staged in $stage (commit $commit):"
  (cd "$stage" && du -ab . | sort -k2 | awk '$2 != "." && !/CTestTestfile/ {printf "  %8.2f MiB  %s\n", $1 / 1048576, $2}')
  echo "  shared libraries the binaries need there:"
  readelf -d "$stage/libkiln.so" "$stage/kiln" 2>/dev/null | awk '/NEEDED/ {print "   ", $NF}' | sort -u
  echo "  newest glibc symbol version needed: $(objdump -T "$stage"/libkiln*.so "$stage/kiln" 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  local rpath
  rpath="$(readelf -d "$stage/bench/kiln_gpu_bench" | grep -E 'RUNPATH|RPATH' || true)"
  echo "  kiln_gpu_bench's run path: ${rpath:-none}"
  # shellcheck disable=SC2016 # the literal $ORIGIN
  case "$rpath" in *'$ORIGIN'*) ;; *) echo "gpu-roundtrip: warning: the run path is absolute; remote sets LD_LIBRARY_PATH" >&2 ;; esac

  # Written beside, then renamed: an interrupted prepare leaves no half archive.
  tar -C "$stage" -cf - . | xz -T0 -6 >"$carry/$carry_archive.partial"
  mv "$carry/$carry_archive.partial" "$carry/$carry_archive"
  local staged bytes
  staged="$(du -sb "$stage" | cut -f1)"
  bytes="$(du -sb "$carry" | cut -f1)"
  awk -v s="$staged" -v b="$bytes" -v limit="$carry_limit_mib" -v dir="$carry" \
    'BEGIN {printf "gpu-roundtrip: %.1f MiB staged, %.1f MiB packed to carry (limit %d MiB): carry \"%s\"\n", s / 1048576, b / 1048576, limit, dir}'
  if [ "$bytes" -gt $((carry_limit_mib * 1048576)) ]; then
    echo "gpu-roundtrip: error: $carry is over $carry_limit_mib MiB" >&2
    exit 1
  fi
}

# ---- remote -----------------------------------------------------------------

declare -a step_names=() step_status=() step_seconds=() step_logs=()
# Set by remote: $results is what comes back ($OUT as given), $work where the
# steps write (exported to them as OUT), $deadline the budget's end (or empty).
results="" work="" deadline="" summary="" host_line=""
results_archive=kiln-gpu-results.tar.gz
# Kept back from the budget for the summary and the last packing.
pack_reserve_s=10
# A step given less than this is not started.
min_step_s=20
declare -A step_cap=()

# run_step NAME LOG COMMAND...: runs the command with its output in LOG,
# records its exit status and time, and never stops the script. The limit is
# KILN_STEP_TIMEOUT, the plan's cap for the step, or what the budget has left,
# whichever is least. The log lives in $results while the step runs (so a
# call cut short still brings it back), then moves into $work's archive.
run_step() {
  local name="$1" log="$2"
  shift 2
  local limit="${KILN_STEP_TIMEOUT:-900}" cap="${step_cap[$current_step]:-0}"
  [ "$cap" -gt 0 ] && [ "$cap" -lt "$limit" ] && limit="$cap"
  if [ -n "$deadline" ]; then
    local left=$((deadline - $(date +%s) - pack_reserve_s))
    if [ "$left" -lt "$min_step_s" ]; then
      echo "==== $name: not run, ${left}s of the budget left" | tee -a "$results/roundtrip.log"
      record_step "$name" "not run (budget)" 0 "-"
      return
    fi
    [ "$left" -lt "$limit" ] && limit="$left"
  fi
  echo "==== $name (at most ${limit}s): $*" | tee -a "$results/roundtrip.log"
  local started status
  started="$(date +%s)"
  # Through bash, so a step may be one of this script's (exported) functions.
  timeout -k 10 "$limit" bash -c '"$@"' bash "$@" >"$results/$log" 2>&1
  status=$?
  local seconds=$(($(date +%s) - started))
  tail -n 40 "$results/$log"
  mv "$results/$log" "$work/$log"
  [ "$status" = 124 ] || [ "$status" = 137 ] && status="$status (timed out at ${limit}s)"
  echo "==== $name: exit $status after ${seconds}s" | tee -a "$results/roundtrip.log"
  record_step "$name" "$status" "$seconds" "$log"
}

record_step() {
  step_names+=("$1")
  step_status+=("$2")
  step_seconds+=("$3")
  step_logs+=("$4")
  write_summary
  pack_results
}

# Everything the steps wrote, as one archive in $results (written beside, then
# renamed, so a call cut short leaves the last whole one).
pack_results() {
  tar -C "$work" -czf "$results/$results_archive.partial" . &&
    mv "$results/$results_archive.partial" "$results/$results_archive"
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
    # A short session's first look: only the named tests (Catch2 filters, e.g. "[wgmma]"),
    # each ';'-separated part a run of its own with its own time limit, so a kernel that
    # never returns costs only its part.
    local status=0 part parts
    IFS=';' read -ra parts <<<"$KILN_GPU_TEST_FILTER"
    for part in "${parts[@]}"; do
      echo "---- tests/test_gpu \"$part\""
      timeout -k 5 "${KILN_GPU_TEST_PART_TIMEOUT:-900}" "$build/tests/test_gpu" "$part" ||
        { echo "exit $?"; status=1; }
    done
    return $status
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
    timeout -k 5 "${KILN_EXAMPLE_TIMEOUT:-600}" \
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

# Where kiln's 8192^3 bf16 GEMM spends its time, beside cuBLAS's on the same shape: Nsight
# Compute's throughput, memory, warp-state, scheduler and occupancy sections for kiln's kernel
# under each of KILN_PROFILE_FLAGS and for cuBLAS's (through PyTorch), and the SASS of each
# kiln kernel (ptxas and cuobjdump there): what the work without a GPU starts from.
run_profile() {
  local status=0 flag name ncu ptxas cuobjdump
  ncu="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
  ptxas="$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)"
  cuobjdump="$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)"
  local model=bench/profile/gemm-bf16-8192.kir
  local sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis
    --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats
    --section Occupancy --section LaunchStats)
  local headline='Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Registers Per Thread|Achieved Occupancy'
  # shellcheck disable=SC2206 # KILN_PROFILE_FLAGS is a list of words
  local flags=(${KILN_PROFILE_FLAGS:---tma --persistent --wgmma})
  for flag in "${flags[@]}"; do
    name="${flag#--}"
    echo "---- ncu: kiln run $model --target cuda $flag"
    # The clocks stay as they are; one launch (the untimed first run) of kiln's GEMM kernel.
    "$ncu" --clock-control none "${sections[@]}" -k regex:contraction --launch-count 1 \
      "$build/kiln" run "$model" --target cuda "$flag" --iterations 1 >"$OUT/ncu-kiln-$name.txt" 2>&1 ||
      { echo "exit $?"; status=1; }
    grep -E "$headline" "$OUT/ncu-kiln-$name.txt" || tail -n 5 "$OUT/ncu-kiln-$name.txt"
    "$build/kiln" compile "$model" --target cuda --arch sm_90a "$flag" --dump=ptx 2>/dev/null |
      sed '/^target: /,$d' >"$OUT/gemm-$name.ptx"
    # Written beside, then renamed: a failed disassembly leaves no empty .sass.
    { "$ptxas" -arch=sm_90a -v "$OUT/gemm-$name.ptx" -o "$OUT/gemm-$name.cubin" &&
      "$cuobjdump" -sass "$OUT/gemm-$name.cubin" >"$OUT/gemm-$name.sass.partial" &&
      mv "$OUT/gemm-$name.sass.partial" "$OUT/gemm-$name.sass"; } ||
      { echo "exit $? (SASS of $flag)"; status=1; }
    rm -f "$OUT/gemm-$name.cubin" "$OUT/gemm-$name.sass.partial"
  done
  echo "---- ncu: cuBLAS (torch.matmul) on the same shape"
  "$ncu" --clock-control none "${sections[@]}" -k 'regex:gemm|nvjet|xmma|cutlass' --launch-count 1 \
    "$python" -c 'import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.matmul(a, b)
torch.cuda.synchronize()' >"$OUT/ncu-cublas.txt" 2>&1 || { echo "exit $?"; status=1; }
  grep -E "$headline" "$OUT/ncu-cublas.txt" || tail -n 5 "$OUT/ncu-cublas.txt"
  return $status
}

# ---- python: the kiln module's GPU tests ------------------------------------
# prepare stages the Python package (build/release/python/kiln: the pure-Python files and
# _kiln, which finds libkiln.so by its run path, $ORIGIN/../..) in $stage/python, and Debian's
# pytest with what it imports (pure Python) in $stage/python-fallback for a GPU machine whose
# Python has none. remote's `python` step runs python/tests/test_cuda_tensors.py (CUDA torch
# tensors read and written in place, checked by data_ptr) with a Python that has torch with
# CUDA and can load _kiln, which is built for Debian's /usr/bin/python3 (its version's ABI).
stage_python() {
  scripts/build.sh release kiln_python >/dev/null
  mkdir -p "$stage/python" "$stage/python-fallback"
  cp -rL build/release/python/kiln "$stage/python/"
  rm -rf "$stage/python/kiln/__pycache__"
  strip --strip-unneeded "$stage"/python/kiln/_kiln*.so
  local module
  for module in pytest _pytest pluggy iniconfig packaging py py.py attr; do
    cp -rL "/usr/lib/python3/dist-packages/$module" "$stage/python-fallback/"
  done
  find "$stage/python-fallback" -name __pycache__ -prune -exec rm -rf {} +
}

run_python_tests() {
  local modules abi candidate py=""
  modules=("$build"/python/kiln/_kiln*.so)
  local module="${modules[0]}"
  if [ ! -f "$module" ]; then
    echo "no python/kiln/_kiln*.so was carried: prepare this tree again"
    return 1
  fi
  abi="$(basename "$module" | cut -d. -f2)" # cpython-311-x86_64-linux-gnu
  local why check='import sys
try:
    import torch
except ImportError as error:
    sys.exit(f"Python {sys.version.split()[0]}: no torch ({error})")
if not torch.cuda.is_available():
    sys.exit(f"Python {sys.version.split()[0]}: torch {torch.__version__} sees no CUDA GPU")
try:
    import kiln
except ImportError as error:
    sys.exit(f"Python {sys.version.split()[0]}: cannot load kiln ({error})")'
  for candidate in "$python" python3 /usr/bin/python3 "python3.$(echo "$abi" | cut -d- -f2 | cut -c2-)"; do
    command -v "$candidate" >/dev/null || continue
    if why="$(PYTHONPATH="$build/python" "$candidate" -c "$check" 2>&1)"; then
      py="$candidate"
      break
    fi
    echo "$candidate: $why"
  done
  if [ -z "$py" ]; then
    echo "no python here has torch with a usable GPU and loads kiln's module, built for $abi"
    return 1
  fi
  local path="$build/python"
  "$py" -c 'import pytest' 2>/dev/null || path="$path:$build/python-fallback"
  # numpy 2 is worth knowing of: Debian's pybind11 (2.10), which _kiln is built with, predates it.
  echo "---- $py ($("$py" -c 'import sys, torch, numpy; print(sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__)' 2>&1 | tail -1))"
  PYTHONPATH="$path" PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -v -rs -p no:cacheprovider \
    python/tests/test_cuda_tensors.py python/tests/test_device_tensors.py
}

# ---- data parallel on GPUs (the dist step) ----------------------------------

# prepare: the first images of Fashion-MNIST (as tests/dist makes them) for kiln train there.
stage_dist_data() {
  local data=/usr/share/datasets/fashion-mnist
  if [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
    echo "gpu-roundtrip: note: no Fashion-MNIST in $data: the dist step will not train" >&2
    return 0
  fi
  /usr/bin/python3 -c 'import sys; sys.path.insert(0, "tests/dist")
from kiln_train_dist_test import small_fashion_mnist
small_fashion_mnist(sys.argv[1])' "$stage/data"
}

# remote: NCCL as kiln's search finds it (the loader, the toolkit's lib64), else the
# nvidia-nccl wheel PyTorch brings, through KILN_LIBNCCL.
find_nccl() {
  [ -n "${KILN_LIBNCCL:-}" ] && return 0
  ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 ' && return 0
  [ -e "${CUDA_HOME:-/usr/local/cuda}/lib64/libnccl.so.2" ] && return 0
  local wheel
  wheel="$("$python" -c 'import os, nvidia.nccl
print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)"
  [ -n "$wheel" ] && [ -e "$wheel" ] && export KILN_LIBNCCL="$wheel"
  return 0
}

# NCCL on GPUs (docs/distributed.md): test_gpu's [nccl] cases (a 1-rank communicator and a
# trainer given it; 2 ranks under mpirun where there are 2 GPUs), then, with 2 GPUs and
# mpirun, kiln train --nproc 2 --target cuda on the MLP recipe against one GPU's weights.
# Open MPI may be missing there: the 2-rank parts then say so and are skipped.
run_dist() {
  local status=0 gpus data="$build/data/fashion-mnist-small"
  find_nccl
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
  echo "---- ${gpus:-0} GPU(s); NCCL: ${KILN_LIBNCCL:-found by the default search}; mpirun: $(command -v mpirun || echo 'not installed')"
  echo "---- tests/test_gpu [nccl]"
  "$build/tests/test_gpu" "[nccl]" || { echo "exit $?"; status=1; }
  local why=""
  if [ "${gpus:-0}" -lt 2 ]; then
    why="${gpus:-0} GPU(s) here; NCCL needs a GPU per rank"
  elif ! command -v mpirun >/dev/null; then
    why="mpirun is not installed here (Debian: openmpi-bin)"
  elif [ ! -f "$build/libkiln_mpi.so" ]; then
    why="no libkiln_mpi.so was carried (prepare builds it where CMake finds MPI)"
  elif [ ! -d "$data" ]; then
    why="no Fashion-MNIST subset was carried ($data)"
  fi
  if [ -n "$why" ]; then
    echo "SKIPPED: kiln train --nproc 2 --target cuda: $why"
    return $status
  fi
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  local args=(train mlp --batch 48 --epochs 2 --target cuda --seed 3 --quiet --data "$data")
  local one="$OUT/dist-gpu1.safetensors" two="$OUT/dist-gpu2.safetensors"
  echo "---- kiln ${args[*]}"
  "$build/kiln" "${args[@]}" --save-weights "$one" || return 1
  echo "---- kiln ${args[*]} --nproc 2"
  "$build/kiln" "${args[@]}" --nproc 2 --save-weights "$two" || return 1
  # GPU kernels for a batch of 48 and for shards of 24 sum in other orders: 1e-4, as test_gpu.
  "$python" -c 'import sys; sys.path.insert(0, "tests/dist")
import kiln_train_dist_test as t
t.compare(sys.argv[1], sys.argv[2], "2 GPUs against one", tolerance=1e-4)' "$one" "$two" ||
    status=1
  rm -f "$one" "$two"
  return $status
}

all_steps="smi,libs,tests,examples,bench,profile,torch,train,tuning,tunebench,python,dist,dynamic"

# The first look of a short device lease (minutes, not an hour): the warpgroup
# kernels' gpu tests, then section (f)'s bf16 convolutions on wgmma and section
# (e)'s bf16 rows (default, wgmma and TMA forced), then Nsight Compute on the
# TMA GEMM kernels and cuBLAS's, then the examples with --tma against the
# reference, then the bf16-mixed twins with --tma. In that order of what
# matters; each step capped, and the budget cuts the rest. Variables set by
# the caller win over the plan's.
plan_first_look() {
  steps="smi,libs,tests,bench,profile,examples,torch"
  : "${budget:=480}"
  # wgmma on cp.async first, then the TMA kernels, each within its own limit.
  : "${KILN_GPU_TEST_FILTER:=[wgmma]~[tma];[tma]}"
  : "${KILN_GPU_TEST_PART_TIMEOUT:=85}"
  : "${KILN_EXAMPLE_TIMEOUT:=60}"
  # conv first: a TMA kernel that never returns on the GPU would take the sections after it.
  # conv2d on wgmma, and of the default's bf16 rows (77%..366% of cuDNN at b714603) the two
  # VGG16 layers that missed the goal, since their copies' addressing changed; each row has
  # its own cuDNN beside it.
  : "${KILN_BENCH_ARGS:=--sections conv,tensorcores --filter tc_bf16,conv_bf16_wgmma,conv_bf16_vgg_224,conv_bf16_vgg_112}"
  : "${KILN_EXAMPLE_ARGS:=--tma --precision bf16-mixed}"
  : "${KILN_TORCH_ARGS:=--precision bf16-mixed --kiln-flags=--tma}"
  # The TMA kernels and cuBLAS under Nsight Compute (the wgmma one when a full plan runs).
  : "${KILN_PROFILE_FLAGS:=--tma --persistent}"
  step_cap=([smi]=20 [libs]=20 [tests]=175 [bench]=170 [profile]=80 [examples]=120)
}

write_summary() {
  local date
  date="$(date -u +%Y-%m-%d)"
  {
    echo "# kiln GPU round trip, $date"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $KILN_BENCH_COMMIT (binaries from $build)"
    echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi failed')"
    echo "- host: $host_line"
    [ -n "$plan" ] && echo "- plan: $plan"
    [ -n "$budget" ] && echo "- budget: ${budget}s for every step together"
    [ "$quick" = 1 ] && echo "- --quick: fewer sizes and runs; a smoke test, not a result"
    [ "$steps" = "$all_steps" ] || echo "- steps: $steps"
    [ -n "${KILN_BENCH_ARGS:-}" ] && echo "- kiln_gpu_bench arguments: ${KILN_BENCH_ARGS}"
    [ -n "${KILN_GPU_TEST_FILTER:-}" ] && echo "- gpu tests: only ${KILN_GPU_TEST_FILTER}"
    [ -n "${KILN_EXAMPLE_ARGS:-}" ] && echo "- examples run with: ${KILN_EXAMPLE_ARGS}"
    [ -n "${KILN_TORCH_ARGS:-}" ] && echo "- torch_gpu.py arguments: ${KILN_TORCH_ARGS}"
    [ -n "${KILN_PROFILE_FLAGS:-}" ] && echo "- profiled kiln flags: ${KILN_PROFILE_FLAGS}"
    [ -n "${KILN_TRAIN_ARGS:-}" ] && echo "- run_train_bench.sh arguments: ${KILN_TRAIN_ARGS}"
    echo
    echo "| step | exit status | seconds | log |"
    echo "|---|---:|---:|---|"
    local i
    for i in "${!step_names[@]}"; do
      echo "| ${step_names[$i]} | ${step_status[$i]} | ${step_seconds[$i]} | \`${step_logs[$i]}\` |"
    done
    echo
    echo "The logs and the benchmark figures (gpu-*.md, e2e-*.md, train-*.md, tune-*.md) are in"
    echo "\`$results_archive\` of the same run; \`scripts/gpu-roundtrip.sh collect\` unpacks them."
  } >"$work/$summary"
  cp "$work/$summary" "$results/$summary"
}

run_named_step() {
  current_step="$1"
  case "$1" in
    smi) run_step "nvidia-smi" nvidia-smi.log nvidia-smi ;;
    libs) run_step "libraries" ldd.log bash -c "ldd '$build/kiln' '$build/bench/kiln_gpu_bench' '$build/bench/kiln_train_bench' | tee /dev/stderr | (! grep 'not found')" ;;
    tests) run_step "gpu tests" ctest-gpu.log run_gpu_tests ;;
    examples) run_step "examples on cuda (--check)" examples-cuda.log run_examples ;;
    bench) run_step "kiln_gpu_bench" gpu-bench.log "$build/bench/kiln_gpu_bench" "${bench_args[@]}" ;;
    profile) run_step "ncu on the 8192^3 GEMM" profile.log run_profile ;;
    torch) run_step "torch_gpu.py" torch-gpu.log "$python" bench/torch_gpu.py "${torch_args[@]}" ;;
    # Training steps: kiln on cuda and on the CPU, PyTorch eager and torch.compile.
    train) # shellcheck disable=SC2086 # KILN_TRAIN_ARGS is a list of words
      run_step "run_train_bench.sh --device cuda" train-bench.log \
      env KILN_BENCH_BUILD="$build" KILN_BENCH_PYTHON="$python" \
      bench/run_train_bench.sh --device cuda --no-build --out "$OUT" ${KILN_TRAIN_ARGS:-} ;;
    tuning) run_step "kiln tune / aot on cuda" tuning.log run_tuning ;;
    tunebench) run_step "kiln_tune_bench --target cuda" tune-bench.log \
      env KILN_QUICK="$quick" bash -c run_tune_bench ;;
    python) run_step "python GPU tests" python-gpu.log run_python_tests ;;
    dist) : "${step_cap[dist]:=300}"
      run_step "NCCL on GPUs" dist.log run_dist ;;
    # A symbolic batch on the GPU (docs/dynamic-shapes.md, decision 16): the table is in the log.
    dynamic) run_step "kiln_dynamic_bench --target cuda" dynamic.log \
      "$build/bench/kiln_dynamic_bench" --target cuda --models mlp,cnn,transformer ;;
  esac
}

# The binaries: the carried archive unpacked into $stage, else a build/release
# of this checkout (a GPU machine that builds for itself).
find_build() {
  if [ -f "$carry/$carry_archive" ]; then
    rm -rf "$stage"
    mkdir -p "$stage"
    if command -v xz >/dev/null; then
      xz -dc "$carry/$carry_archive" | tar -C "$stage" -xf -
    else
      "$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$carry/$carry_archive" "$stage"
    fi || { echo "gpu-roundtrip: cannot unpack $carry/$carry_archive" >&2; exit 1; }
    build="$stage"
  elif [ -x build/release/kiln ]; then
    build=build/release
  else
    echo "gpu-roundtrip: no $carry/$carry_archive and no build/release/kiln: run prepare here and carry $carry" >&2
    exit 1
  fi
}

remote() {
  local quick=0 steps="$all_steps" plan="" budget=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --quick) quick=1 ;;
      --steps) steps="${2:?--steps needs a list}"; shift ;;
      --plan) plan="${2:?--plan needs first-look or full}"; shift ;;
      --budget) budget="${2:?--budget needs seconds}"; shift ;;
      *) usage ;;
    esac
    shift
  done
  case "$plan" in
    first-look) plan_first_look ;;
    full | "") ;;
    *) echo "gpu-roundtrip: unknown plan '$plan' (first-look or full)" >&2; exit 2 ;;
  esac
  local step
  for step in ${steps//,/ }; do
    [[ ",$all_steps," == *",$step,"* ]] ||
      { echo "gpu-roundtrip: unknown step '$step' (of $all_steps)" >&2; exit 2; }
  done
  if [ -n "$budget" ]; then
    [[ "$budget" =~ ^[0-9]+$ ]] || { echo "gpu-roundtrip: --budget takes whole seconds" >&2; exit 2; }
    deadline=$(($(date +%s) + budget))
  fi

  results="${OUT:-$root/gpu-out}"
  mkdir -p "$results"
  results="$(cd "$results" && pwd)"
  rm -f "$results/$results_archive" "$results/roundtrip.log"
  work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-work.XXXXXX")"
  python="${KILN_BENCH_PYTHON:-python3}"
  "$python" -c 'import torch' 2>/dev/null || python=/usr/bin/python3
  find_build
  # Once: importing torch takes seconds, and the summary is rewritten after each step.
  host_line="$(hostname), $(nproc) CPUs; $("$python" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo 'no PyTorch')"
  export KILN_BENCH_COMMIT
  KILN_BENCH_COMMIT="$(cat "$build/commit.txt" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  summary="gpu-roundtrip-$(date -u +%Y-%m-%d)-$KILN_BENCH_COMMIT.md"
  # The binaries find kiln's libraries by run path; this also covers a build
  # directory whose run path is absolute. cuBLAS comes from the toolkit.
  local cuda_lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
  export LD_LIBRARY_PATH="$root/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -d "$cuda_lib" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cuda_lib"
  [ -f "$build/build-dir.txt" ] && rewrite_ctest_paths
  # The steps write into $work, under the name they have always used.
  OUT="$work"
  export build OUT python KILN_GPU_TEST_FILTER KILN_GPU_TEST_PART_TIMEOUT KILN_EXAMPLE_ARGS \
    KILN_EXAMPLE_TIMEOUT KILN_PROFILE_FLAGS
  export -f run_gpu_tests run_examples run_tuning run_tune_bench run_profile run_python_tests \
    run_dist find_nccl
  : >"$results/roundtrip.log"

  bench_args=(--out "$OUT")
  torch_args=(--device cuda --kiln "$build/kiln" --out "$OUT")
  if [ "$quick" = 1 ]; then
    bench_args+=(--quick)
    torch_args+=(--iterations 10)
  fi
  # shellcheck disable=SC2206 # KILN_BENCH_ARGS is a list of words
  bench_args+=(${KILN_BENCH_ARGS:-})
  # shellcheck disable=SC2206
  torch_args+=(${KILN_TORCH_ARGS:-})
  write_summary
  for step in ${steps//,/ }; do
    run_named_step "$step"
  done
  echo
  cat "$work/$summary"
  echo "gpu-roundtrip: logs and results in $results/$results_archive"
  rm -rf "$work"
  local status
  for status in "${step_status[@]}"; do
    [ "$status" = 0 ] || return 1
  done
  return 0
}

# Unpacks a remote run's archive (or takes DIR's files as they are) and copies
# the result files into bench/results; the logs stay in the unpacked folder.
collect() {
  local dir="${1:?usage: scripts/gpu-roundtrip.sh collect DIR}"
  local from="$dir"
  if [ -f "$dir/$results_archive" ]; then
    from="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-results.XXXXXX")"
    tar -C "$from" -xzf "$dir/$results_archive" ||
      { echo "gpu-roundtrip: cannot unpack $dir/$results_archive" >&2; exit 1; }
    # The summary outside the archive is the newer one (written last).
    cp "$dir"/gpu-roundtrip-*.md "$from/" 2>/dev/null
  fi
  mkdir -p bench/results
  local copied=0 file
  for file in "$from"/gpu-*.md "$from"/e2e-*.md "$from"/train-*.md "$from"/tune-*.md; do
    [ -e "$file" ] || continue
    cp -v "$file" bench/results/
    copied=$((copied + 1))
  done
  if [ "$copied" = 0 ]; then
    echo "gpu-roundtrip: no gpu-*.md, e2e-*.md, train-*.md or tune-*.md in $from" >&2
    exit 1
  fi
  echo "gpu-roundtrip: $copied result file(s) in bench/results; the logs stay in $from"
}

case "${1:-}" in
  prepare) prepare ;;
  remote) shift; remote "$@" ;;
  collect) shift; collect "$@" ;;
  *) usage ;;
esac
