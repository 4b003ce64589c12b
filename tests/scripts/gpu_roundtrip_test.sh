#!/usr/bin/env bash
# scripts/gpu-roundtrip.sh's remote and collect on stand-in binaries, without a
# GPU: the carried archive is unpacked, a plan's variables reach its steps, a
# step over its limit is stopped and named, the budget leaves later steps
# unrun, at most four files come back (the device call returns eight),
# collect finds the results inside the archive, and the profile step hands
# Nsight Compute the GEMM kernels with the clocks left alone.
set -uo pipefail
script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/gpu-roundtrip.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_grep() { grep -q -- "$1" "$2" || fail "$2 lacks '$1'"; }

# A checkout with the script and a carried archive of stand-ins.
root="$tmp/repo"
mkdir -p "$root/scripts" "$root/bench" "$tmp/stage/bench" "$tmp/stage/tests" "$tmp/bin"
cp "$script" "$root/scripts/"
# shellcheck disable=SC2016 # the stand-ins' code is expanded when they run
stub() { printf '#!/usr/bin/env bash\n%s\n' "$2" >"$1"; chmod +x "$1"; }
stub "$tmp/stage/kiln" 'if [ "$2" = --help ]; then echo "example:mlp example:cnn"; else echo "kiln $*"; fi'
stub "$tmp/stage/tests/test_gpu" 'echo "test_gpu filter: $*"; sleep 40'
stub "$tmp/stage/bench/kiln_gpu_bench" \
  'echo "bench $*"; while [ $# -gt 0 ]; do [ "$1" = --out ] && echo "| row |" >"$2/gpu-test-bench.md"; shift; done'
echo abc1234 >"$tmp/stage/commit.txt"
mkdir -p "$root/build/gpu-carry"
tar -C "$tmp/stage" -cf - . | xz >"$root/build/gpu-carry/kiln-gpu.tar.xz"
stub "$tmp/bin/nvidia-smi" 'echo "Stand-in GPU, 0.0, 1 MiB"'
export PATH="$tmp/bin:$PATH"

# First look under a budget: the tests step meets KILN_STEP_TIMEOUT, after
# which less than a step's minimum is left.
out="$tmp/out1"
# Budget 54: the tests step starts with up to 24 s spent before it (54 - 10
# kept back >= 20: room for a loaded machine to unpack the carry), and after
# its 25 s less than 20 are left (54 - 25 - 10 = 19, less what went before).
(cd "$root" && OUT="$out" KILN_STEP_TIMEOUT=25 \
  scripts/gpu-roundtrip.sh remote --plan first-look --budget 54 >"$tmp/run1.log" 2>&1)
[ $? = 1 ] || fail "a timed-out step must make remote exit 1"
summary="$(find "$out" -name 'gpu-roundtrip-*-abc1234.md' | head -1)"
[ -n "$summary" ] || fail "no summary named by the carried commit in $out"
if [ -n "$summary" ]; then
  expect_grep '| nvidia-smi | 0 |' "$summary"
  expect_grep '| gpu tests | 124 (timed out at 25s) |' "$summary"
  expect_grep '| kiln_gpu_bench | not run (budget) |' "$summary"
  expect_grep '| torch_gpu.py | not run (budget) |' "$summary"
  expect_grep '- plan: first-look' "$summary"
fi
count="$(find "$out" -type f | wc -l)"
[ "$count" -le 4 ] || fail "$count files came back in $out (at most 4)"
mkdir -p "$tmp/unpacked1"
tar -C "$tmp/unpacked1" -xzf "$out/kiln-gpu-results.tar.gz" || fail "no results archive in $out"
expect_grep 'test_gpu filter: \[wgmma\]~\[tma\]' "$tmp/unpacked1/ctest-gpu.log"
expect_grep 'Stand-in GPU' "$tmp/unpacked1/nvidia-smi.log"
expect_grep 'gpu tests: exit 124' "$out/roundtrip.log"

# The full plan's steps in the order given; collect takes the bench's result
# out of the archive into bench/results.
out="$tmp/out2"
(cd "$root" && OUT="$out" KILN_BENCH_ARGS="--filter tc_bf16,conv_bf16" \
  scripts/gpu-roundtrip.sh remote --steps bench,smi >"$tmp/run2.log" 2>&1) ||
  fail "remote --steps bench,smi failed: $(cat "$tmp/run2.log")"
[ "$(grep -o '^==== [a-z_-]*' "$out/roundtrip.log" | uniq | tr '\n' ' ')" = \
  "==== kiln_gpu_bench ==== nvidia-smi " ] || fail "steps not run in the order given"
(cd "$root" && scripts/gpu-roundtrip.sh collect "$out" >"$tmp/collect.log" 2>&1) ||
  fail "collect failed: $(cat "$tmp/collect.log")"
[ -f "$root/bench/results/gpu-test-bench.md" ] || fail "collect did not bring gpu-test-bench.md"
ls "$root"/bench/results/gpu-roundtrip-*-abc1234.md >/dev/null 2>&1 || fail "collect did not bring the summary"
listing="$(tar -tzf "$out/kiln-gpu-results.tar.gz")"
grep -q 'gpu-bench.log' <<<"$listing" || fail "the bench's log is not in the archive"
grep -q -- '--filter tc_bf16,conv_bf16' "$tmp/run2.log" || fail "KILN_BENCH_ARGS did not reach the bench"

# ';' splits the gpu tests into runs of their own, each stopped at its own limit: a test that
# never returns costs only its part.
out="$tmp/out5"
(cd "$root" && OUT="$out" KILN_GPU_TEST_FILTER="[a];[b]" KILN_GPU_TEST_PART_TIMEOUT=2 \
  scripts/gpu-roundtrip.sh remote --steps tests >"$tmp/run5.log" 2>&1)
mkdir -p "$tmp/unpacked5"
tar -C "$tmp/unpacked5" -xzf "$out/kiln-gpu-results.tar.gz"
expect_grep 'test_gpu filter: \[a\]' "$tmp/unpacked5/ctest-gpu.log"
expect_grep 'test_gpu filter: \[b\]' "$tmp/unpacked5/ctest-gpu.log"
[ "$(grep -c '^exit 124' "$tmp/unpacked5/ctest-gpu.log")" = 2 ] ||
  fail "each gpu test part should stop at its own limit"

# The profile step: Nsight Compute on kiln's GEMM under each flag and on cuBLAS's, the clocks
# left alone, and each kiln kernel's SASS, all in the archive (no cubin left behind).
stub "$tmp/bin/ncu" 'echo "ncu $*"; echo "Duration 1.00 ms"'
stub "$tmp/bin/ptxas" 'while [ $# -gt 0 ]; do [ "$1" = -o ] && echo cubin >"$2"; shift; done'
stub "$tmp/bin/cuobjdump" 'echo "SASS of $2"'
mkdir -p "$root/bench/profile"
cp "$(dirname "$script")/../bench/profile/gemm-bf16-8192.kir" "$root/bench/profile/"
out="$tmp/out6"
(cd "$root" && OUT="$out" KILN_PROFILE_FLAGS="--tma --wgmma" \
  scripts/gpu-roundtrip.sh remote --steps profile >"$tmp/run6.log" 2>&1) ||
  fail "remote --steps profile failed: $(cat "$tmp/run6.log")"
mkdir -p "$tmp/unpacked6"
tar -C "$tmp/unpacked6" -xzf "$out/kiln-gpu-results.tar.gz"
for name in tma wgmma; do
  expect_grep "ncu --clock-control none .*-k regex:contraction --launch-count 1 .*kiln run bench/profile/gemm-bf16-8192.kir --target cuda --$name" \
    "$tmp/unpacked6/ncu-kiln-$name.txt"
  expect_grep "SASS of .*gemm-$name.cubin" "$tmp/unpacked6/gemm-$name.sass"
  [ ! -e "$tmp/unpacked6/gemm-$name.cubin" ] || fail "the $name cubin was left behind"
done
# Without a disassembler the step fails and leaves no empty .sass.
stub "$tmp/bin/cuobjdump" 'exit 3'
out="$tmp/out7"
(cd "$root" && OUT="$out" KILN_PROFILE_FLAGS="--tma" \
  scripts/gpu-roundtrip.sh remote --steps profile >"$tmp/run7.log" 2>&1)
[ $? = 1 ] || fail "a failed disassembly must fail the profile step"
mkdir -p "$tmp/unpacked7"
tar -C "$tmp/unpacked7" -xzf "$out/kiln-gpu-results.tar.gz"
[ ! -e "$tmp/unpacked7/gemm-tma.sass" ] && [ ! -e "$tmp/unpacked7/gemm-tma.sass.partial" ] ||
  fail "a failed disassembly left a .sass behind"
expect_grep 'exit 3 (SASS of --tma)' "$tmp/unpacked7/profile.log"
expect_grep 'regex:gemm|nvjet|xmma|cutlass' "$tmp/unpacked6/ncu-cublas.txt"
expect_grep 'Duration 1.00 ms' "$tmp/unpacked6/profile.log"

# Bad requests are refused before anything runs.
(cd "$root" && OUT="$tmp/out3" scripts/gpu-roundtrip.sh remote --steps smi,nope >"$tmp/run3.log" 2>&1)
[ $? = 2 ] || fail "an unknown step must exit 2"
expect_grep "unknown step 'nope'" "$tmp/run3.log"
(cd "$root" && OUT="$tmp/out3" scripts/gpu-roundtrip.sh remote --plan everything >"$tmp/run4.log" 2>&1)
[ $? = 2 ] || fail "an unknown plan must exit 2"

if [ "$failures" -gt 0 ]; then
  echo "gpu_roundtrip_test: $failures failure(s); first run's output:" >&2
  cat "$tmp/run1.log" >&2
  exit 1
fi
echo "gpu_roundtrip_test: ok"
