#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-19 and runs each from its seed corpus
# for a third of N seconds (default 30): the IR parser fuzzer, the passes
# fuzzer (simplify,cse,fold,dce must keep graphs valid and outputs bit-exact),
# and the AOT bundle fuzzer (the loader's checks on corrupt bundles).
# Any crash fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
share=$(( (seconds + 2) / 3 ))
dir="$root/build/fuzz"
cmake -S "$root" -B "$dir" -G Ninja -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build "$dir" -j "$(nproc)" --target parser_fuzzer passes_fuzzer bundle_fuzzer
for fuzzer in parser_fuzzer passes_fuzzer bundle_fuzzer; do
  # A fresh copy of the seeds per fuzzer, so none grows the checked-in corpus.
  corpus="$(mktemp -d)"
  trap 'rm -rf "$corpus"' EXIT
  if [ "$fuzzer" = bundle_fuzzer ]; then
    cp "$root"/tests/fuzz/bundle-corpus/* "$corpus"/
    flags=(-max_len=65536)
  else
    cp "$root"/tests/fuzz/corpus/* "$corpus"/
    flags=(-dict="$root/tests/fuzz/kir.dict" -max_len=4096)
  fi
  echo "== $fuzzer: ${share}s"
  "$dir/tests/fuzz/$fuzzer" "${flags[@]}" -max_total_time="$share" \
    -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
  rm -rf "$corpus"
done
