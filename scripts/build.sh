#!/usr/bin/env bash
# Configures and builds kiln. Usage: scripts/build.sh [release|asan] [targets...]
#   release -> build/release (optimized, g++; the main job, the install and the package)
#   asan    -> build/asan (g++, ASan + UBSan at -O0, line tables; the sanitized tests)
# KILN_TEST_SET=all|sanitized|unsanitized picks which tests the tree builds (a new tree: all;
# otherwise what it was configured with). scripts/test.sh splits them between the two trees
# (docs/testing.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
flavor="${1:-release}"
shift || true

case "$flavor" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) args=(-DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON) ;;
  *) echo "usage: scripts/build.sh [release|asan] [targets...]" >&2; exit 2 ;;
esac
if [ -n "${KILN_TEST_SET:-}" ]; then
  args+=(-DKILN_TEST_SET="$KILN_TEST_SET")
fi

dir="$root/build/$flavor"
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere (CI) still hits.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
# A tree configured with clang (build/asan was clang's for a while) starts over: CMake
# cannot change the compiler of a configured tree.
if [ -f "$dir/CMakeCache.txt" ] && grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' "$dir/CMakeCache.txt"; then
  rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
fi
cmake -S "$root" -B "$dir" -G Ninja "${args[@]}" >/dev/null
jobs="$(nproc)"
if [ $# -gt 0 ]; then
  cmake --build "$dir" -j "$jobs" --target "$@"
else
  cmake --build "$dir" -j "$jobs"
fi
