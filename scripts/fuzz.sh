#!/usr/bin/env bash
# Runs each libFuzzer target from its seed corpus for an equal share of N seconds (default 30,
# so a few seconds each): the IR parser fuzzer, the kernel IR parser fuzzer (print(parse(x))
# must parse and print the same), the passes fuzzer (simplify,cse,fold,dce must
# keep graphs valid and outputs bit-exact), the AOT bundle fuzzer (the loader's checks on
# corrupt bundles), the ONNX importer fuzzer, and one per file kiln reads: checkpoints, safetensors,
# kernel-cache entries, tuning-record imports, IDX data sets (plain and gzipped) and .npy
# (each must load or fail with an Error, and what loads must write and read back the same).
# The fuzzers build in build/fuzz: clang, ASan+UBSan, coverage in the libraries, no tests.
# Any crash fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
dir="$root/build/fuzz"
fuzzers=(parser_fuzzer kernel_parser_fuzzer passes_fuzzer bundle_fuzzer onnx_fuzzer checkpoint_fuzzer)
fuzzers+=(safetensors_fuzzer cache_entry_fuzzer tuning_json_fuzzer idx_fuzzer npy_fuzzer)
# N seconds in all, shared equally (at least one each).
share=$(( seconds / ${#fuzzers[@]} > 0 ? seconds / ${#fuzzers[@]} : 1 ))
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON -DKILN_FUZZ=ON \
  -DKILN_TESTS=OFF -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${fuzzers[@]}"
for fuzzer in "${fuzzers[@]}"; do
  # A fresh copy of the seeds per fuzzer, so none grows the checked-in corpus.
  corpus="$(mktemp -d)"
  trap 'rm -rf "$corpus"' EXIT
  if [ "$fuzzer" = bundle_fuzzer ]; then
    cp "$root"/tests/fuzz/bundle-corpus/* "$corpus"/
    flags=(-max_len=65536)
  elif [ "$fuzzer" = checkpoint_fuzzer ]; then
    cp "$root"/tests/fuzz/checkpoint-corpus/* "$corpus"/
    flags=(-max_len=8192)
  elif [ "$fuzzer" = onnx_fuzzer ]; then
    cp "$root"/tests/fuzz/onnx-corpus/* "$corpus"/
    flags=(-max_len=16384)
  elif [ "$fuzzer" = safetensors_fuzzer ]; then
    cp "$root"/tests/fuzz/safetensors-corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/safetensors.dict" -max_len=8192)
  elif [ "$fuzzer" = cache_entry_fuzzer ]; then
    cp "$root"/tests/fuzz/cache-entry-corpus/* "$corpus"/
    flags=(-max_len=8192)
  elif [ "$fuzzer" = tuning_json_fuzzer ]; then
    cp "$root"/tests/fuzz/tuning-corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/tuning.dict" -max_len=8192)
  elif [ "$fuzzer" = idx_fuzzer ]; then
    # Small: a gzip stream inflates a thousandfold, and every input is also read gzipped.
    cp "$root"/tests/fuzz/idx-corpus/* "$corpus"/
    flags=(-max_len=4096)
  elif [ "$fuzzer" = kernel_parser_fuzzer ]; then
    cp "$root"/tests/fuzz/kernel-ir-corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/kernel-ir.dict" -max_len=4096)
  elif [ "$fuzzer" = npy_fuzzer ]; then
    cp "$root"/tests/fuzz/npy-corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/npy.dict" -max_len=4096)
  else
    cp "$root"/tests/fuzz/corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/kir.dict" -max_len=4096)
  fi
  echo "== $fuzzer: ${share}s"
  "$dir/tests/fuzz/$fuzzer" "${flags[@]}" -max_total_time="$share" \
    -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
  rm -rf "$corpus"
done
