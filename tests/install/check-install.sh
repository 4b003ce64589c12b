#!/usr/bin/env bash
# kiln as others get it: installs a build with `cmake --install` into a fresh prefix and
# packages it with `cpack -G DEB`, then builds tests/install's programs against each through
# find_package(kiln) (and one through pkg-config) and runs them. Also checks what the package
# holds: the public headers and not the private ones, versioned SONAMEs, run paths, tools
# that run, and a Depends line that covers every library the binaries need.
#
# Usage: tests/install/check-install.sh BUILD_DIR [--system]
#   --system also installs the .deb with apt (root or sudo), builds the consumer against
#   /usr and removes the package again; without it the .deb is checked with apt's
#   simulation and unpacked into a scratch directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$1" && pwd)"
system="${2:-}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

fail() { echo "check-install: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# The consumer programs built against a kiln found under prefix $1 (empty: the system's).
build_and_run_consumer() {
  local prefix="$1" dir="$2"
  local args=(-S "$here" -B "$dir" -G Ninja)
  [ -n "$prefix" ] && args+=(-DCMAKE_PREFIX_PATH="$prefix")
  cmake "${args[@]}" >"$dir.log" 2>&1 || { cat "$dir.log"; fail "find_package(kiln) under '${prefix:-/usr}'"; }
  cmake --build "$dir" >>"$dir.log" 2>&1 || { cat "$dir.log"; fail "building the consumer against '${prefix:-/usr}'"; }
  "$dir/mlp_consumer" "$dir/mlp.kiln" "$dir/expected.bin"
  "$dir/bundle_consumer" "$dir/mlp.kiln" "$dir/expected.bin"
  # The runtime-only program must not pull in the compiler.
  if readelf -d "$dir/bundle_consumer" | grep -q 'libkiln\.so'; then
    fail "bundle_consumer links libkiln; it should need libkiln_rt alone"
  fi
}

# The Debian package that owns library $1, a path ldconfig gave: dpkg knows each file by one
# name, which on a merged /usr may be the /lib or the /usr/lib one, of the link or its target.
package_of() {
  local real candidate
  real="$(dirname "$1")/$(basename "$(readlink -f "$1")")"
  for candidate in "$1" "$real" "/usr$1" "/usr$real" "${1#/usr}" "${real#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | awk -F: 'NR == 1 { print $1 }' && return 0
  done
  return 0
}

# What any kiln install under $1 must look like.
check_layout() {
  local root="$1" libdir
  libdir="$(dirname "$(find "$root" -name libkiln.so -print -quit)")"
  [ -f "$root/include/kiln/kiln.h" ] && [ -f "$root/include/kiln/rt.h" ] || fail "umbrella headers missing under $root/include/kiln"
  [ -f "$root/include/kiln/ir/graph/Ops.def" ] || fail "ir/graph/Ops.def (included by public headers) missing"
  [ -d "$root/include/kiln/codegen/llvm" ] && [ -n "$(find "$root/include/kiln/codegen/llvm" -name '*.h' ! -name HostBackend.h)" ] &&
    fail "private LLVM glue headers installed: $(ls "$root/include/kiln/codegen/llvm")"
  [ -f "$root/include/kiln/runtime/cuda/CudaDriver.h" ] && fail "private runtime/cuda/CudaDriver.h installed"
  if grep -rlE '#include[[:space:]]*[<"](llvm/|cuda\.h|cudnn|nvrtc)' "$root/include/kiln" >/dev/null; then
    fail "an installed header includes LLVM or CUDA: $(grep -rlE '#include[[:space:]]*[<"](llvm/|cuda\.h|cudnn|nvrtc)' "$root/include/kiln")"
  fi
  for lib in kiln kiln_rt; do
    readelf -d "$libdir/lib$lib.so" | grep -q "SONAME.*\[lib$lib\.so\.0\.1\]" || fail "lib$lib.so has no SONAME lib$lib.so.0.1"
  done
  readelf -d "$root/bin/kiln" | grep -q 'RUNPATH.*\$ORIGIN/\.\./lib' || fail "bin/kiln's RUNPATH does not point at ../lib"
  [ -f "$libdir/cmake/kiln/kilnConfig.cmake" ] && [ -f "$libdir/cmake/kiln/kilnConfigVersion.cmake" ] || fail "CMake package files missing"
  [ -f "$libdir/pkgconfig/kiln.pc" ] && [ -f "$libdir/pkgconfig/kiln-rt.pc" ] || fail "pkg-config files missing"
  # The MPI plugin, where the build has one, beside libkiln_rt (where kiln_rt looks for it).
  if [ -f "$build/libkiln_mpi.so" ] && [ ! -f "$libdir/libkiln_mpi.so" ]; then fail "libkiln_mpi.so missing from $libdir"; fi
  "$root/bin/kiln" --help >/dev/null || fail "installed kiln --help"
  "$root/bin/kiln-opt" --help >/dev/null || fail "installed kiln-opt --help"
  # The Python package (docs/python.md), imported from the install by Debian's python3.
  PYTHONPATH="$root/lib/python3/dist-packages" KILN_CACHE=off /usr/bin/python3 -c "$python_check" "$root" ||
    fail "the installed kiln Python package under $root"
}

# Imports kiln from the install under argv[1], compiles a graph for the CPU and checks it
# against the reference interpreter.
python_check='
import sys, numpy as np, kiln
assert kiln.__file__.startswith(sys.argv[1]), kiln.__file__
g = kiln.Graph("installed")
x = g.input("x", [3, 5])
g.output("y", kiln.nn.Dense(4, activation="relu")(g, x))
v = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
np.testing.assert_allclose(kiln.compile(g, target="cpu")(x=v)["y"], kiln.evaluate(g, x=v)["y"], rtol=1e-5, atol=1e-6)
'

step "cmake --install into a fresh prefix"
prefix="$scratch/prefix"
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" || { cat "$scratch/install.log"; fail "cmake --install"; }
check_layout "$prefix"
KILN_CACHE=off "$prefix/bin/kiln" run example:mlp --target cpu --batch 3 --check >"$scratch/run.log" ||
  { cat "$scratch/run.log"; fail "the installed kiln run example:mlp --check"; }

step "find_package(kiln) against the prefix"
build_and_run_consumer "$prefix" "$scratch/consumer"

step "pkg-config kiln-rt against the prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
g++ -o "$scratch/bundle_consumer_pc" "$here/bundle_consumer.cpp" $(pkg-config --cflags --libs kiln-rt)
"$scratch/bundle_consumer_pc" "$scratch/consumer/mlp.kiln" "$scratch/consumer/expected.bin"

step "cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$scratch/deb" >"$scratch/cpack.log" 2>&1) || { cat "$scratch/cpack.log"; fail "cpack"; }
deb="$(ls "$scratch"/deb/kiln_*.deb)"
dpkg-deb --field "$deb" Package Version Architecture Depends
# The package names Depends lists, one a line, versions dropped.
depended="$(dpkg-deb --field "$deb" Depends | sed -e 's/ *([^)]*)//g' -e 's/, */\n/g')"
# The MPI plugin's libmpi is only recommended: kiln runs a single process without it.
recommended="$(dpkg-deb --field "$deb" Recommends | sed -e 's/ *([^)]*)//g' -e 's/, */\n/g')"
# apt must accept the package as it is: every dependency resolvable on this Debian.
apt-get install -s "$deb" >"$scratch/apt.log" 2>&1 || { cat "$scratch/apt.log"; fail "apt-get install -s $deb"; }
debroot="$scratch/debroot"
dpkg-deb -x "$deb" "$debroot"
check_layout "$debroot/usr"
# Every library a packaged binary needs is in the package or in a package it depends on.
while read -r elf; do
  while read -r needed; do
    [ -n "$(find "$debroot" -name "$needed")" ] && continue
    # (awk reads to the end: an early exit would kill ldconfig with SIGPIPE, a failure here.)
    path="$(ldconfig -p | awk -v lib="$needed" '$1 == lib && /x86-64/ && !found { print $NF; found = 1 }')"
    [ -n "$path" ] || fail "$elf needs $needed, which this machine does not have"
    owner="$(package_of "$path")"
    [ -n "$owner" ] || fail "$elf needs $needed ($path), which no Debian package owns"
    if [[ "$elf" == */libkiln_mpi.so ]] && grep -qxF "$owner" <<<"$recommended"; then continue; fi
    grep -qxF "$owner" <<<"$depended" || fail "$elf needs $needed from $owner, which Depends does not list"
  done < <(readelf -d "$elf" | awk '/NEEDED/ { gsub(/[][]/, "", $NF); print $NF }')
done < <(find "$debroot/usr" -type f \( -name '*.so*' -o -path '*/bin/*' \))

step "find_package(kiln) against the unpacked .deb"
build_and_run_consumer "$debroot/usr" "$scratch/consumer-deb"

if [ "$system" = "--system" ]; then
  step "apt-get install the .deb, build against /usr, remove it"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -q "$deb" >"$scratch/apt-install.log" 2>&1 || { cat "$scratch/apt-install.log"; fail "apt-get install $deb"; }
  status=0
  (build_and_run_consumer "" "$scratch/consumer-system") || status=$?
  $sudo apt-get remove -y -q kiln >/dev/null
  [ "$status" -eq 0 ] || fail "the consumer against the installed .deb"
fi
echo "check-install: ok"
