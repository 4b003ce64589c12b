#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs dependencies, builds with
# ASan+UBSan, runs every ctest test (Catch2 per layer, lit golden tests), then
# builds the IR parser fuzzer with clang and runs it briefly.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

"$root/scripts/setup.sh"
"$root/scripts/build.sh" asan

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
(cd "$root/build/asan" && ctest --output-on-failure -j "$(nproc)")

"$root/scripts/fuzz.sh" "${KILN_FUZZ_SECONDS:-30}"
echo "kiln: all tests passed"
