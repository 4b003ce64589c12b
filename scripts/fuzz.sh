#!/usr/bin/env bash
# Runs each libFuzzer target from its seed corpus for an equal share of N seconds (default
# 30): the IR parser fuzzer, the passes fuzzer (simplify,cse,fold,dce must keep graphs valid
# and outputs bit-exact), the AOT bundle fuzzer (the loader's checks on corrupt bundles), the
# ONNX importer fuzzer and the checkpoint fuzzer.
# The fuzzers build in build/fuzz: clang, ASan+UBSan, coverage in the libraries, no tests.
# Any crash fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
dir="$root/build/fuzz"
fuzzers=(parser_fuzzer passes_fuzzer bundle_fuzzer onnx_fuzzer checkpoint_fuzzer)
# N seconds in all, shared equally.
share=$(( (seconds + ${#fuzzers[@]} - 1) / ${#fuzzers[@]} ))
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
  else
    cp "$root"/tests/fuzz/corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/kir.dict" -max_len=4096)
  fi
  echo "== $fuzzer: ${share}s"
  "$dir/tests/fuzz/$fuzzer" "${flags[@]}" -max_total_time="$share" \
    -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
  rm -rf "$corpus"
done
