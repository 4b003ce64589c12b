// The vector math functions generated host kernels may call: glibc's libmvec variants of f32
// exp, log, sin, cos, pow, tanh and erf, 4, 8 or 16 lanes at once. Without them LLVM's loop
// vectorizer turns a vectorized loop's exp into one libm call per lane (a SiLU epilogue then
// costs more than its convolution). Part of the CPU target's description, as HostKernelAbi.h:
// codegen maps the scalar functions to these names and binds them in its JIT by these
// addresses; runtime/cpu/VectorMath.cpp defines the table, and kiln_rt links libmvec, so
// kernels in bundles resolve these names as they resolve libm's.
#pragma once

#include <span>

namespace kiln::codegen {

/// One vector variant: `lanes` lanes of the scalar function `scalar` (an LLVM intrinsic name
/// such as "llvm.exp.f32", or a libm name such as "tanhf"), named `vector` in the x86-64
/// vector function ABI, usable where the CPU has `feature` (LLVM's name: "sse2", "avx2", "avx512f").
struct VectorMathFunction {
  const char *scalar;
  const char *vector;
  int lanes;
  int arguments;
  const char *feature;
  void *address;
};

/// Every variant kiln's kernels may use; empty where libmvec is not linked (other than x86-64).
std::span<const VectorMathFunction> vectorMathFunctions();

} // namespace kiln::codegen
