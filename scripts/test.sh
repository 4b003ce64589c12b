#!/usr/bin/env bash
# The whole test suite from a fresh clone (docs/testing.md): installs dependencies, then
#  1. the release build (g++ -O3): the simulator, ptxas/NVRTC and whole-training suites, the
#     lit golden tests, the GPU tests (skipped, saying why, without a GPU), the round-trip
#     script, the install check (cmake --install, find_package and pkg-config consumers,
#     the .deb), and the PyTorch comparisons (ONNX models, state dicts);
#  2. the sanitized build (g++, ASan+UBSan): every other unit test;
#  3. the libFuzzer targets (clang, ASan+UBSan, the libraries and the ten fuzzers only).
# Every test runs once, in one of these builds.
#
#   scripts/test.sh           what CI runs
#   scripts/test.sh --quick   development: the release build's fast unit tests (no simulator,
#                             ptxas or training suites, no sanitizers, no fuzzing)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
start=$SECONDS
elapsed() { echo "kiln test: $1 after $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"; }

"$root/scripts/setup.sh"

if [ "${1:-}" = "--quick" ]; then
  KILN_TEST_SET=all "$root/scripts/build.sh" release
  (cd "$root/build/release" && ctest --output-on-failure -j "$jobs" -L unit -LE unsanitized)
  elapsed "quick tests passed"
  exit 0
fi

KILN_TEST_SET=unsanitized "$root/scripts/build.sh" release
elapsed "release build"
(cd "$root/build/release" && ctest --output-on-failure -j "$jobs")
elapsed "release tests"

# Only the test executables: the tools and examples serve the release tree's tests.
KILN_TEST_SET=sanitized "$root/scripts/build.sh" asan kiln_tests
elapsed "sanitized build"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
(cd "$root/build/asan" && ctest --output-on-failure -j "$jobs")
elapsed "sanitized tests"

"$root/scripts/fuzz.sh" "${KILN_FUZZ_SECONDS:-30}"
elapsed "all tests passed"
