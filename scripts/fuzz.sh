#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-19 and runs each from the seed corpus
# for half of N seconds (default 30): the IR parser fuzzer, then the passes
# fuzzer (simplify,cse,fold,dce must keep graphs valid and outputs bit-exact).
# Any crash fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
half=$(( (seconds + 1) / 2 ))
dir="$root/build/fuzz"
cmake -S "$root" -B "$dir" -G Ninja -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build "$dir" -j "$(nproc)" --target parser_fuzzer passes_fuzzer
for fuzzer in parser_fuzzer passes_fuzzer; do
  # A fresh copy of the seeds per fuzzer, so neither grows the checked-in corpus.
  corpus="$(mktemp -d)"
  trap 'rm -rf "$corpus"' EXIT
  cp "$root"/tests/fuzz/corpus/* "$corpus"/
  echo "== $fuzzer: ${half}s"
  "$dir/tests/fuzz/$fuzzer" -dict="$root/tests/fuzz/kir.dict" -max_total_time="$half" \
    -max_len=4096 -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
  rm -rf "$corpus"
done
