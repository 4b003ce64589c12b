#!/usr/bin/env bash
# The safety net of a lowering change: records the kernel IR, the PTX of both GPU backends and
# ptxas's register and spill report of every example, for sm_80 and sm_90a, under each
# precision and GEMM strategy, so that one command tells what a change did to the code.
#
#   scripts/kernel-snapshot.sh record DIR        write the snapshot of this tree into DIR
#   scripts/kernel-snapshot.sh compare DIR       record this tree anew and diff it against DIR
#   scripts/kernel-snapshot.sh digest            print the snapshot's digest: per configuration
#                                                a hash of each file and ptxas's report
#   scripts/kernel-snapshot.sh check FILE        compare this tree's digest with FILE
#
# tests/snapshots/kernels.digest is the digest at the commit that last wrote it (say which in the
# commit): `check` names every configuration whose code changed since and every register or
# spill change; to read the change itself, `record` the old commit (a worktree) and `compare`.
#
# A snapshot is one folder per configuration (example, architecture, backend, precision,
# strategy), each holding kernel.txt (kernel IR), ptx.txt (the PTX module), cuda.txt (the CUDA
# C, for nvrtc) and ptxas.txt (per kernel: registers, spill stores and loads). compare prints a
# summary per configuration (same / differs), the diff of each that differs and every change
# in spills, and exits 1 when anything differs. It needs a release build (build/release) and
# ptxas (the CUDA toolkit), no GPU. KILN_SNAPSHOT_EXAMPLES picks examples (default: all).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kiln="$root/build/release/kiln"
ptxas="${KILN_PTXAS:-/usr/local/cuda/bin/ptxas}"
examples=(${KILN_SNAPSHOT_EXAMPLES:-mlp cnn lstm resnet transformer vgg})

usage() {
  echo "usage: scripts/kernel-snapshot.sh record DIR | compare DIR | digest | check FILE" >&2
  exit 2
}
[ $# -ge 1 ] || usage
[ -x "$kiln" ] || { echo "kernel-snapshot: $kiln is missing (scripts/build.sh release)" >&2; exit 2; }
[ -x "$ptxas" ] || { echo "kernel-snapshot: no ptxas at $ptxas (set KILN_PTXAS)" >&2; exit 2; }

# Configurations: architecture, backend, precision, extra flags (the GEMM strategy).
configurations=(
  "sm_80 llvm fp32 -" "sm_80 nvrtc fp32 -" "sm_80 llvm bf16-mixed -" "sm_80 nvrtc bf16-mixed -"
  "sm_90a llvm fp32 -" "sm_90a nvrtc fp32 -" "sm_90a llvm bf16-mixed -" "sm_90a nvrtc bf16-mixed -"
  "sm_90a llvm bf16-mixed --wgmma" "sm_90a nvrtc bf16-mixed --wgmma"
  "sm_90a llvm bf16-mixed --tma" "sm_90a llvm bf16-mixed --persistent"
)

# ptxas -v per kernel, one line each: "kernel: N registers, S bytes spill stores, L bytes spill loads".
ptxasReport() {
  local arch=$1 ptx=$2 log
  # ptxas refusing the PTX is a finding in itself: say which module, with ptxas's words.
  if ! log="$("$ptxas" -arch="$arch" -v -o /dev/null "$ptx" 2>&1)"; then
    echo "kernel-snapshot: ptxas -arch=$arch rejects $ptx:" >&2
    echo "$log" | head -n 20 >&2
    return 1
  fi
  echo "$log" |
    awk -F"'" '/Compiling entry function/ { name = $2 }
         /spill stores/ { spills = $0 }
         /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/);
                                    print name ": " substr($0, RSTART, RLENGTH) "; " spills }' |
    sed -E 's/ptxas info *: *//; s/ +/ /g' | sort
}

record() {
  local out=$1 cache
  mkdir -p "$out"
  cache="$(mktemp -d)"
  trap 'rm -rf "$cache"' RETURN
  for example in "${examples[@]}"; do
    for configuration in "${configurations[@]}"; do
      read -r arch backend precision strategy <<<"$configuration"
      local flags=(--target cuda --arch "$arch" --backend "$backend" --precision "$precision"
                   --tuning off)
      [ "$strategy" = - ] || flags+=("$strategy")
      local name="$example.$arch.$backend.$precision${strategy#-}" # strategy: -wgmma, ...
      local dir="$out/$name" dumps=kernel,ptx
      [ "$backend" = nvrtc ] && dumps=kernel,cuda,ptx
      mkdir -p "$dir"
      # The dumps come before the summary ("target: ...", then times and cache lines, which
      # vary): keep the dumps only.
      if ! KILN_CACHE_DIR="$cache" "$kiln" compile "example:$example" "${flags[@]}" \
             --dump="$dumps" >"$dir/all.txt" 2>"$dir/stderr.txt"; then
        echo "kernel-snapshot: $name does not compile:" >&2
        cat "$dir/stderr.txt" >&2
        exit 1
      fi
      awk -v dir="$dir" 'BEGIN { part = "kernel" }
           /^\/\/ ---- CUDA C for / { part = "cuda" }
           /^\/\/ ---- PTX for / { part = "ptx" }
           /^target: / { exit }
           { print > (dir "/" part ".txt") }' "$dir/all.txt"
      tail -n +2 "$dir/ptx.txt" >"$dir/module.ptx"
      ptxasReport "$arch" "$dir/module.ptx" >"$dir/ptxas.txt" ||
        { echo "kernel-snapshot: in $name (the PTX is kept at $dir/module.ptx)" >&2; exit 1; }
      rm -f "$dir/all.txt" "$dir/module.ptx"
      [ -s "$dir/stderr.txt" ] || rm -f "$dir/stderr.txt"
      echo "recorded $name ($(grep -c . "$dir/ptxas.txt") kernels)"
    done
  done
}

# One block per configuration: its name, a hash per file, then ptxas's lines.
digestOf() {
  local snapshot=$1
  for dir in "$snapshot"/*/; do
    echo "== $(basename "$dir")"
    (cd "$dir" && sha256sum kernel.txt ptx.txt $( [ -f cuda.txt ] && echo cuda.txt) | cut -c1-16,65-)
    cat "$dir/ptxas.txt"
  done
}

case "$1" in
  record) [ $# -eq 2 ] || usage; record "$2" ;;
  digest | check)
    fresh="$(mktemp -d)"
    record "$fresh" >/dev/null
    if [ "$1" = digest ]; then
      digestOf "$fresh"
      rm -rf "$fresh"
      exit 0
    fi
    [ $# -eq 2 ] && [ -f "$2" ] || usage
    if diff -u "$2" <(digestOf "$fresh") >"$fresh/digest.diff"; then
      echo "kernel-snapshot: every configuration's code is as in $2"
      rm -rf "$fresh"
      exit 0
    fi
    grep -E '^[-+]== |^[-+].*spill' "$fresh/digest.diff" || true
    echo "kernel-snapshot: the code differs from $2 (full digest diff above the spill lines):"
    cat "$fresh/digest.diff"
    rm -rf "$fresh"
    exit 1
    ;;
  compare)
    [ $# -eq 2 ] || usage
    [ -d "$2" ] || { echo "kernel-snapshot: no snapshot at $2" >&2; exit 2; }
    fresh="$(mktemp -d)"
    record "$fresh" >/dev/null
    status=0
    for dir in "$2"/*/; do
      name="$(basename "$dir")"
      if diff -rq "$dir" "$fresh/$name" >/dev/null 2>&1; then
        echo "same     $name"
        continue
      fi
      status=1
      echo "differs  $name"
      diff -u "$dir/ptxas.txt" "$fresh/$name/ptxas.txt" | grep -E '^[-+][^-+]' | grep -i spill || true
    done
    for dir in "$fresh"/*/; do
      [ -d "$2/$(basename "$dir")" ] || { echo "new      $(basename "$dir")"; status=1; }
    done
    [ $status -eq 0 ] || diff -ru "$2" "$fresh" | head -n "${KILN_SNAPSHOT_DIFF_LINES:-400}" || true
    rm -rf "$fresh"
    exit $status
    ;;
  *) usage ;;
esac
