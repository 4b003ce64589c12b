#!/usr/bin/env bash
# Runs each libFuzzer target from its seed corpus for a third of N seconds (default 30): the
# IR parser fuzzer, the passes fuzzer (simplify,cse,fold,dce must keep graphs valid and
# outputs bit-exact), and the AOT bundle fuzzer (the loader's checks on corrupt bundles).
# The fuzzers live in the sanitized tree (scripts/build.sh asan), built here if missing.
# Any crash fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
share=$(( (seconds + 2) / 3 ))
dir="$root/build/asan"
fuzzers=(parser_fuzzer passes_fuzzer bundle_fuzzer)
if [ -f "$dir/build.ninja" ]; then
  cmake --build "$dir" -j "$(nproc)" --target "${fuzzers[@]}"
else
  "$root/scripts/build.sh" asan "${fuzzers[@]}"
fi
for fuzzer in "${fuzzers[@]}"; do
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
