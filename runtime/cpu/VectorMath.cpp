// libmvec's f32 variants, named once: the scalar function each vectorizes, its lane count and
// the CPU feature its code needs (the ABI letter: b = SSE, d = AVX2, e = AVX-512). The 4-lane
// variants serve loops the vectorizer runs 4 wide: a softmax's exponentials summed in f64,
// 4 lanes a 256-bit register, made 4 libm calls each without them.
#include "codegen/HostVectorMath.h"

namespace kiln::codegen {

#if defined(__x86_64__)

// Declared without their vector signatures: only their addresses are taken here.
#define KILN_LIBMVEC(name) extern "C" void name();
KILN_LIBMVEC(_ZGVbN4v_expf)
KILN_LIBMVEC(_ZGVdN8v_expf)
KILN_LIBMVEC(_ZGVeN16v_expf)
KILN_LIBMVEC(_ZGVbN4v_logf)
KILN_LIBMVEC(_ZGVdN8v_logf)
KILN_LIBMVEC(_ZGVeN16v_logf)
KILN_LIBMVEC(_ZGVbN4v_sinf)
KILN_LIBMVEC(_ZGVdN8v_sinf)
KILN_LIBMVEC(_ZGVeN16v_sinf)
KILN_LIBMVEC(_ZGVbN4v_cosf)
KILN_LIBMVEC(_ZGVdN8v_cosf)
KILN_LIBMVEC(_ZGVeN16v_cosf)
KILN_LIBMVEC(_ZGVbN4v_tanhf)
KILN_LIBMVEC(_ZGVdN8v_tanhf)
KILN_LIBMVEC(_ZGVeN16v_tanhf)
KILN_LIBMVEC(_ZGVbN4v_erff)
KILN_LIBMVEC(_ZGVdN8v_erff)
KILN_LIBMVEC(_ZGVeN16v_erff)
KILN_LIBMVEC(_ZGVbN4vv_powf)
KILN_LIBMVEC(_ZGVdN8vv_powf)
KILN_LIBMVEC(_ZGVeN16vv_powf)
#undef KILN_LIBMVEC

namespace {

#define KILN_ROW(scalar, vector, lanes, arguments, feature)                                        \
  { scalar, #vector, lanes, arguments, feature, reinterpret_cast<void *>(&vector) }
// `scalar` is what kiln's host code generator calls: LLVM intrinsics for exp, log, sin, cos
// and pow; libm for tanh and erf, which have no intrinsic. f32 only: libmvec's f64 variants
// are up to 4 ulp off (glibc's scalar f64 functions stay within 1), and f64 is where a user
// asks for accuracy, not speed.
const VectorMathFunction kFunctions[] = {
    KILN_ROW("llvm.exp.f32", _ZGVbN4v_expf, 4, 1, "sse2"),
    KILN_ROW("llvm.exp.f32", _ZGVdN8v_expf, 8, 1, "avx2"),
    KILN_ROW("llvm.exp.f32", _ZGVeN16v_expf, 16, 1, "avx512f"),
    KILN_ROW("llvm.log.f32", _ZGVbN4v_logf, 4, 1, "sse2"),
    KILN_ROW("llvm.log.f32", _ZGVdN8v_logf, 8, 1, "avx2"),
    KILN_ROW("llvm.log.f32", _ZGVeN16v_logf, 16, 1, "avx512f"),
    KILN_ROW("llvm.sin.f32", _ZGVbN4v_sinf, 4, 1, "sse2"),
    KILN_ROW("llvm.sin.f32", _ZGVdN8v_sinf, 8, 1, "avx2"),
    KILN_ROW("llvm.sin.f32", _ZGVeN16v_sinf, 16, 1, "avx512f"),
    KILN_ROW("llvm.cos.f32", _ZGVbN4v_cosf, 4, 1, "sse2"),
    KILN_ROW("llvm.cos.f32", _ZGVdN8v_cosf, 8, 1, "avx2"),
    KILN_ROW("llvm.cos.f32", _ZGVeN16v_cosf, 16, 1, "avx512f"),
    KILN_ROW("tanhf", _ZGVbN4v_tanhf, 4, 1, "sse2"),
    KILN_ROW("tanhf", _ZGVdN8v_tanhf, 8, 1, "avx2"),
    KILN_ROW("tanhf", _ZGVeN16v_tanhf, 16, 1, "avx512f"),
    KILN_ROW("erff", _ZGVbN4v_erff, 4, 1, "sse2"),
    KILN_ROW("erff", _ZGVdN8v_erff, 8, 1, "avx2"),
    KILN_ROW("erff", _ZGVeN16v_erff, 16, 1, "avx512f"),
    KILN_ROW("llvm.pow.f32", _ZGVbN4vv_powf, 4, 2, "sse2"),
    KILN_ROW("llvm.pow.f32", _ZGVdN8vv_powf, 8, 2, "avx2"),
    KILN_ROW("llvm.pow.f32", _ZGVeN16vv_powf, 16, 2, "avx512f"),
};
#undef KILN_ROW

} // namespace

std::span<const VectorMathFunction> vectorMathFunctions() { return kFunctions; }

#else

std::span<const VectorMathFunction> vectorMathFunctions() { return {}; }

#endif

} // namespace kiln::codegen
