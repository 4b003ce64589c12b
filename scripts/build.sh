#!/usr/bin/env bash
# Configures and builds kiln. Usage: scripts/build.sh [release|asan] [targets...]
#   release -> build/release (optimized; the main job)
#   asan    -> build/asan (Debug with AddressSanitizer + UndefinedBehaviorSanitizer; the tests)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
flavor="${1:-release}"
shift || true

case "$flavor" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) args=(-DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON) ;;
  *) echo "usage: scripts/build.sh [release|asan] [targets...]" >&2; exit 2 ;;
esac

dir="$root/build/$flavor"
cmake -S "$root" -B "$dir" -G Ninja "${args[@]}" >/dev/null
jobs="$(nproc)"
if [ $# -gt 0 ]; then
  cmake --build "$dir" -j "$jobs" --target "$@"
else
  cmake --build "$dir" -j "$jobs"
fi
