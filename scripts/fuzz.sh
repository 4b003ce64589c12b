#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-19 and runs the IR parser fuzzer for
# N seconds (default 30) from the seed corpus. Any crash fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
dir="$root/build/fuzz"
cmake -S "$root" -B "$dir" -G Ninja -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build "$dir" -j "$(nproc)" --target parser_fuzzer
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
cp "$root"/tests/fuzz/corpus/* "$corpus"/
"$dir/tests/fuzz/parser_fuzzer" -dict="$root/tests/fuzz/kir.dict" -max_total_time="$seconds" -max_len=4096 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
