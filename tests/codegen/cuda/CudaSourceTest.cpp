// The CUDA C backend: key lines of the emitted source for each GPU feature,
// then NVRTC compiles of all test kernels for sm_80 and sm_90a with the PTX
// evidence each feature must leave (entries, barriers, shuffles, atomics,
// vector loads, conversions), and the errors of malformed kernels.
#include "CudaTestKernels.h"
#include "NvrtcOnThread.h"

#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <regex>

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::testing::cuda;
using kiln::test::compileWithNvrtcOnThread;

namespace {

codegen::GpuTarget targetNamed(std::string_view arch) {
  auto target = codegen::gpuTargetNamed(arch);
  REQUIRE(target);
  return *target;
}

std::string sourceOf(const Kernel &kernel, std::string_view arch = "sm_80") {
  auto source = codegen::cuda::emitCudaSource(std::span(&kernel, 1), targetNamed(arch));
  if (!source)
    FAIL(source.error().str());
  return *source;
}

bool contains(const std::string &text, std::string_view piece) {
  return text.find(piece) != std::string::npos;
}

/// Whether NVRTC loads here; says why not (once per test) when it does not.
bool nvrtcPresent() {
  auto version = codegen::cuda::nvrtcVersion();
  if (!version) {
    WARN("NVRTC unavailable, CUDA C compiles not checked: " << version.error().str());
    return false;
  }
  return true;
}

} // namespace

TEST_CASE("CUDA C of a grid vector add reads like CUDA", "[cuda-codegen]") {
  std::string source = sourceOf(vectorAddKernel(1000));
  CHECK(contains(source, "extern \"C\" __global__ void __launch_bounds__(256) vector_add(float "
                         "*__restrict__ a, float *__restrict__ b, float *__restrict__ out) {\n"));
  // Index math the ranges prove fits in 32 bits is int math.
  CHECK(contains(source, "\n  const int blk = blockIdx.x;\n  const int t = threadIdx.x;\n"
                         "  const int i = blk * 256 + t;\n  if (i < 1000) {\n"
                         "    out[i] = a[i] + b[i];\n  }\n}\n"));
}

TEST_CASE("CUDA C vector accesses are aligned vector values", "[cuda-codegen]") {
  std::string source = sourceOf(copyF32x4Kernel());
  CHECK(contains(source, "const float4 in_vec = kiln_load<float4>(&in[(blk * 64 + t) * 4]);\n"));
  CHECK(contains(source, "kiln_store<float4>(&out[(blk * 64 + t) * 4], "
                         "make_float4(in_vec.x, in_vec.y, in_vec.z, in_vec.w));\n"));
  // No vector temporary lives in an array whose address is taken.
  CHECK_FALSE(contains(source, "in_vec["));

  std::string wide = sourceOf(scaleF32x8Kernel());
  CHECK(contains(wide, "float in_vec[8];\n  const long long index = t * 8;\n"
                       "  in_vec[0] = in[index + 0];\n"));
  CHECK(contains(wide, "in_vec[7] = in[index + 7];\n  const float v[8] = {in_vec[0], "));
  CHECK(contains(wide, "out[index_1 + 7] = v[7] * scale[0];\n"));

  std::string predicated = sourceOf(predicatedKernel(61));
  CHECK(contains(predicated, "const float4 in_vec = t * 4 + 3 < 61 ? kiln_load<float4>(&in[t * 4]) : float4{};\n"));
  CHECK(contains(predicated, "if (t * 4 + 3 < 61) kiln_store<float4>(&out[t * 4], make_float4(in_vec.x * 2.0f, "));

  // Narrow elements travel packed in 32-bit words, little-endian.
  std::string halves = sourceOf(copyF16x4Kernel());
  CHECK(contains(halves, "const uint2 in_vec = kiln_load<uint2>(&in[t * 4]);\n"));
  CHECK(contains(halves, "kiln_store<uint2>(&out[t * 4], make_uint2((unsigned int)(unsigned short)(unsigned short)in_vec.x | "
                         "(unsigned int)(unsigned short)(unsigned short)(in_vec.x >> 16) << 16, "));
  CHECK(contains(halves, "(unsigned int)(unsigned short)(unsigned short)(in_vec.y >> 16) << 16));\n"));
  // A vector let of a type with lane fields is one register value too.
  CHECK(contains(halves, "const float4 v = make_float4(kiln_f16_to_f32((unsigned short)in_vec_1.x), "));
  CHECK(contains(halves, "make_float4(v.x + v.x, v.y + v.y, v.z + v.z, v.w + v.w)"));
  CHECK(contains(predicated, "if (t < 61) scalar_out[t] = t < 61 ? in[t] : 0.0f;\n"));
}

TEST_CASE("CUDA C shared memory, barriers, shuffles and atomics", "[cuda-codegen]") {
  std::string reduce = sourceOf(blockReduceKernel());
  CHECK(contains(reduce, "__launch_bounds__(256) block_reduce("));
  CHECK(contains(reduce, "{\n  __shared__ __align__(16) float partial[256];\n  const int blk = blockIdx.x;\n"));
  CHECK(contains(reduce, "  partial[t] = in[blk * 256 + t];\n  __syncthreads();\n  if (t < 128) {\n"
                         "    partial[t] = partial[t] + partial[t + 128];\n  }\n  __syncthreads();\n"));

  std::string warp = sourceOf(warpReduceKernel());
  CHECK(contains(warp, "const float shuffled = __shfl_xor_sync(0xffffffffu, in[t], 16, 32);\n"
                       "  const float sum16 = in[t] + shuffled;\n"));
  CHECK(contains(warp, "__shfl_xor_sync(0xffffffffu, sum16, 8, 32);\n"));
  CHECK(contains(sourceOf(shuffleKernel(ShuffleMode::Down, DType::I64)),
                 "const long long shuffled = __shfl_down_sync(0xffffffffu, in[t], 3, 32);\n"));
  CHECK(contains(sourceOf(shuffleKernel(ShuffleMode::Up, DType::F64)), "__shfl_up_sync(0xffffffffu, in[t], 3, 32)"));
  CHECK(contains(sourceOf(shuffleKernel(ShuffleMode::Idx, DType::I32)), "__shfl_sync(0xffffffffu, in[t], 3, 32)"));

  std::string atomics = sourceOf(atomicsKernel());
  CHECK(contains(atomics, "__shared__ __align__(16) int block_sum[1];\n"));
  CHECK(contains(atomics, "atomicAdd(&sums_f32[0], in_f32[blk * 64 + t]);\n"));
  CHECK(contains(atomics, "atomicAdd(&sums_f64[0], in_f64[blk * 64 + t]);\n"));
  CHECK(contains(atomics, "atomicMax(&extremes_i32[1], in_i32[blk * 64 + t]);\n"));
  CHECK(contains(atomics, "atomicAdd(reinterpret_cast<unsigned long long *>(&extremes_i64[0]), "
                          "static_cast<unsigned long long>(in_i64[blk * 64 + t]));\n"));
  CHECK(contains(atomics, "atomicMin(&extremes_i64[2], in_i64[blk * 64 + t]);\n"));
  CHECK(contains(atomics, "atomicAdd(&block_sum[0], in_i32[blk * 64 + t]);\n"));
}

TEST_CASE("CUDA C intrinsics, casts and total integer division", "[cuda-codegen]") {
  std::string f32 = sourceOf(intrinsicsKernel(DType::F32));
  for (std::string_view call : {"expf(x)", "logf(x)", "sqrtf(x)", "rsqrtf(x)", "tanhf(x)", "erff(x)",
                                "sinf(x)", "cosf(x)", "fabsf(x)", "floorf(x)", "powf(x, 1.5f)",
                                "fmaf(x, x, -0.25f)"})
    CHECK(contains(f32, call));
  std::string f64 = sourceOf(intrinsicsKernel(DType::F64));
  for (std::string_view call : {"exp(x)", "log(x)", "sqrt(x)", "rsqrt(x)", "tanh(x)", "erf(x)", "sin(x)",
                                "cos(x)", "fabs(x)", "floor(x)", "pow(x, 1.5)", "fma(x, x, -0.25)"})
    CHECK(contains(f64, call));

  std::string casts = sourceOf(castsKernel());
  CHECK(contains(casts, "kiln_f16_to_f32(kiln_f32_to_f16(in[t]))"));
  CHECK(contains(casts, "kiln_bf16_to_f32(kiln_f32_to_bf16(in[t]))"));
  CHECK(contains(casts, "kiln_f8e4m3_to_f32(kiln_f32_to_f8e4m3(in[t]))"));
  CHECK(contains(casts, "(float)__float2int_rz(in[t])"));
  CHECK(contains(casts, "(float)kiln_f32_to_i8(in[t])"));
  CHECK(contains(casts, "(float)__float2ll_rz(in[t])"));
  CHECK(contains(casts, "(float)(in[t] != 0.0f)"));
  CHECK(contains(casts, "kiln_f64_to_bf16(in_f64[t])"));
  CHECK(contains(casts, "kiln_f64_to_f16((double)in_i64[t])"));
  CHECK(contains(casts, "(float)(signed char)(int)in_i64[t]"));
  CHECK(contains(casts, "halves[t] = kiln_f64_to_f16(in_f64[t]);"));
  // sm_80 has no f8 cvt: the software encoder; sm_90a converts in hardware.
  CHECK(contains(casts, "kiln_f32_to_f8e4m3(float value) { return kiln_f64_to_f8e4m3((double)value); }"));
  CHECK(contains(sourceOf(castsKernel(), "sm_90a"), "cvt.rn.satfinite.e4m3x2.f32"));
  CHECK_FALSE(contains(casts, "cvt.rn.satfinite.e4m3x2.f32"));

  std::string division = sourceOf(integerDivisionKernel());
  CHECK(contains(division, "q[t] = kiln_div_i32(a[t], b[t]);"));
  CHECK(contains(division, "r[t] = kiln_mod_i32(a[t], b[t]);"));
  CHECK(contains(division, "q64[t] = kiln_div_i64(a64[t], b64[t]);"));
  CHECK(contains(division, "r64[t] = kiln_mod_i64(a64[t], b64[t]);"));

  std::string transpose = sourceOf(transpose2dKernel(37, 45));
  CHECK(contains(transpose, "__launch_bounds__(256) transpose_2d("));
  CHECK(contains(transpose, "const int by = blockIdx.y;\n  const int bx = blockIdx.x;\n"
                            "  const int ty = threadIdx.y;\n  const int tx = threadIdx.x;\n"));
  CHECK(contains(transpose, "if (row < 37 && col < 45) {\n    out[col * 37 + row] = in[row * 45 + col];\n"));
}

TEST_CASE("CUDA C integer math that could wrap uses the wrapping helpers", "[cuda-codegen]") {
  // An i64 sum of loaded values can overflow, so it is not a plain `+` (signed
  // overflow is undefined in C); index math the loop bounds prove is.
  auto a = makeBuffer("a", DType::I64, 32), out = makeBuffer("out", DType::I64, 32);
  auto blk = makeVar("blk"), t = makeVar("t");
  Kernel kernel{"wrapping", {a, out},
                gridLoops(1, 32, blk, t, store(out, kir::ref(t), add(mul(load(a, kir::ref(t)), index(3)), kir::ref(t))))};
  CHECK(contains(sourceOf(kernel), "out[t] = kiln_add_i64(kiln_mul_i64(a[t], 3), t);"));
}

TEST_CASE("CUDA C index math leaves int where a value could pass its range", "[cuda-codegen]") {
  // t * 100000000 reaches 3.1e9: computed as long long although t is an int
  // and the quotient fits again.
  CHECK(contains(sourceOf(wideIndexKernel()), "out[t] = in[(long long)t * 100000000 / 100000000];"));
  auto out = makeBuffer("out", DType::F32, 64);
  auto blk = makeVar("blk"), t = makeVar("t");
  // Loop counters are ints where the whole range, end included, fits.
  auto i = makeVar("i"), j = makeVar("j");
  Kernel loops{"loops", {out},
               gridLoops(1, 1, blk, t,
                         seq({forLoop(i, index(0), index(64), ForKind::Serial, store(out, kir::ref(i), floatImm(1.0, f32()))),
                              forLoop(j, index(0), index(int64_t{1} << 31), ForKind::Serial,
                                      store(out, index(0), floatImm(2.0, f32())))}))};
  std::string source = sourceOf(loops);
  CHECK(contains(source, "for (int i = 0; i < 64; ++i) {"));
  CHECK(contains(source, "for (long long j = 0; j < 2147483648LL; ++j) {"));
}

TEST_CASE("CUDA C names are sanitized and unique", "[cuda-codegen]") {
  auto a = makeBuffer("x.in", DType::F32, 32), b = makeBuffer("float", DType::F32, 32);
  auto blk = makeVar("i"), t = makeVar("i"), v = makeVar("i", f32());
  Kernel kernel{"k.1", {a, b},
                gridLoops(1, 32, blk, t, let(v, load(a, kir::ref(t)), store(b, kir::ref(t), kir::ref(v))))};
  std::string source = sourceOf(kernel);
  CHECK(contains(source, "k_1(float *__restrict__ x_in, float *__restrict__ float_1) {"));
  CHECK(contains(source, "const int i = blockIdx.x;\n  const int i_1 = threadIdx.x;\n"
                         "  const float i_2 = x_in[i_1];\n  float_1[i_1] = i_2;\n"));
}

TEST_CASE("CUDA C joins two stores to elements i and i + 1 of a global buffer, i even",
          "[cuda-codegen]") {
  // An epilogue's accumulator pair: out[2t] and out[2t + 1] in bf16 become one 4-byte store.
  const Type bf16 = Type::scalar(DType::BF16);
  auto in = makeBuffer("in", DType::F32, 512), out = makeBuffer("out", DType::BF16, 520);
  auto blk = makeVar("blk"), t = makeVar("t");
  auto storesAt = [&](ExprPtr low, ExprPtr lowPredicate = nullptr) {
    ExprPtr value = cast(load(in, kir::ref(t)), bf16);
    return seq({store(out, low, value, lowPredicate),
                store(out, add(low, index(1)), cast(mul(load(in, kir::ref(t)), floatImm(2.0, f32())), bf16))});
  };
  auto kernelOf = [&](StmtPtr body) {
    return Kernel{"pairs", {in, out}, gridLoops(1, 256, blk, t, std::move(body))};
  };
  auto count = [](const std::string &source, std::string_view piece) {
    size_t found = 0;
    for (size_t at = source.find(piece); at != std::string::npos; at = source.find(piece, at + 1))
      ++found;
    return found;
  };
  ExprPtr even = mul(kir::ref(t), index(2));

  std::string paired = sourceOf(kernelOf(storesAt(even)));
  CHECK(contains(paired, "kiln_store<unsigned int>(&out[t * 2], (unsigned int)(unsigned short)"));
  CHECK(count(paired, "out[") == 1);

  // Each store under its own lets of the same index, the high one's constant folded in.
  auto low = makeVar("low"), high = makeVar("high");
  std::string underLets = sourceOf(kernelOf(
      seq({let(low, even, store(out, add(kir::ref(low), index(8)), cast(load(in, kir::ref(t)), bf16))),
           let(high, even, store(out, add(kir::ref(high), index(9)), cast(load(in, kir::ref(t)), bf16)))})));
  CHECK(contains(underLets, "kiln_store<unsigned int>(&out[low + 8], "));

  // Not joined: an odd i, a predicated store, a high value reading what the low one writes, a
  // gap between the elements.
  std::string odd = sourceOf(kernelOf(storesAt(add(even, index(1)))));
  CHECK(count(odd, "kiln_store<") == 0);
  CHECK(count(odd, "out[") == 2);
  std::string predicated = sourceOf(kernelOf(storesAt(even, lt(kir::ref(t), index(200)))));
  CHECK(count(predicated, "kiln_store<") == 0);
  std::string readsOut = sourceOf(kernelOf(
      seq({store(out, even, cast(load(in, kir::ref(t)), bf16)),
           store(out, add(even, index(1)), load(out, even))})));
  CHECK(count(readsOut, "kiln_store<") == 0);
  std::string gap = sourceOf(kernelOf(
      seq({store(out, even, cast(load(in, kir::ref(t)), bf16)),
           store(out, add(even, index(2)), cast(load(in, kir::ref(t)), bf16))})));
  CHECK(count(gap, "kiln_store<") == 0);
  if (nvrtcPresent()) {
    auto compiled = compileWithNvrtcOnThread(paired, "pairs.cu", targetNamed("sm_80"));
    if (!compiled)
      FAIL(compiled.error().str() << "\n" << paired);
    CHECK(contains(compiled->ptx, "st.global.u32"));
    CHECK_FALSE(contains(compiled->ptx, "st.global.u16"));
  }
}

TEST_CASE("CUDA C of a malformed GPU kernel is a VerifyError naming it", "[cuda-codegen]") {
  auto out = makeBuffer("out", DType::F32, 64), extent = makeBuffer("extent", DType::I64, 1);
  auto blk = makeVar("blk"), t = makeVar("t");
  Kernel kernel{"bad_threads", {out, extent},
                forRange(blk, 1, ForKind::BlockX,
                         forLoop(t, index(0), load(extent, index(0)), ForKind::ThreadX,
                                 store(out, kir::ref(t), floatImm(1.0, f32()))))};
  auto source = codegen::cuda::emitCudaSource(std::span(&kernel, 1), targetNamed("sm_80"));
  REQUIRE_FALSE(source);
  CHECK(source.error().code() == ErrorCode::VerifyError);
  CHECK(contains(source.error().message(), "bad_threads"));
  CHECK(contains(source.error().message(), "thread.x"));
}

TEST_CASE("NVRTC compiles every test kernel for sm_80 and sm_90a", "[cuda-codegen][nvrtc]") {
  std::vector<Kernel> kernels = allTestKernels();
  for (std::string_view arch : codegen::kCheckedGpuArchs) {
    INFO(arch);
    codegen::GpuTarget target = targetNamed(arch);
    auto source = codegen::cuda::emitCudaSource(kernels, target);
    REQUIRE(source);
    CHECK(contains(*source, "// CUDA C generated by kiln for " + target.archName()));
    if (!nvrtcPresent())
      continue;
    auto compiled = compileWithNvrtcOnThread(*source, "kiln_test_kernels.cu", target);
    if (!compiled)
      FAIL(compiled.error().str() << "\n" << *source);
    const std::string &ptx = compiled->ptx;
    CHECK(compiled->log.empty());
    CHECK(!compiled->cubin.empty());
    // A cubin is an ELF file.
    REQUIRE(compiled->cubin.size() > 4);
    CHECK(static_cast<char>(compiled->cubin[1]) == 'E');
    CHECK(contains(ptx, ".target " + target.archName()));
    for (const Kernel &kernel : kernels)
      CHECK(contains(ptx, ".entry " + kernel.name + "("));
    CHECK(contains(ptx, "bar.sync"));
    for (std::string_view mode : {"bfly", "down", "up", "idx"})
      CHECK(contains(ptx, fmt::format("shfl.sync.{}.b32", mode)));
    CHECK(std::regex_search(ptx, std::regex(R"((atom|red)\.global\.add\.f32)")));
    CHECK(std::regex_search(ptx, std::regex(R"((atom|red)\.global\.add\.f64)")));
    CHECK(std::regex_search(ptx, std::regex(R"((atom|red)\.global\.max\.s64)")));
    CHECK(std::regex_search(ptx, std::regex(R"((atom|red)\.shared\.add\.u32)")));
    CHECK(std::regex_search(ptx, std::regex(R"(ld\.global(\.nc)?\.v4\.f32)")));
    CHECK(contains(ptx, "st.global.v4.f32"));
    CHECK(contains(ptx, "cvt.rn.f16.f32"));
    CHECK(contains(ptx, "cvt.rn.bf16.f32"));
    CHECK(contains(ptx, "cvt.rzi.s32.f32"));
    CHECK(contains(ptx, "fma.rn.f32"));
    CHECK(contains(ptx, "%ctaid.y"));
    CHECK(contains(ptx, "%tid.y"));
    CHECK(contains(ptx, "cvt.rn.satfinite.e4m3x2.f32") == (target.sm >= 89));
  }
}

TEST_CASE("NVRTC does not contract a*b+c into an fma", "[cuda-codegen][nvrtc]") {
  auto a = makeBuffer("a", DType::F32, 32), out = makeBuffer("out", DType::F32, 32);
  auto blk = makeVar("blk"), t = makeVar("t");
  ExprPtr x = load(a, kir::ref(t));
  Kernel kernel{"mul_add", {a, out}, gridLoops(1, 32, blk, t, store(out, kir::ref(t), add(mul(x, x), x)))};
  std::string source = sourceOf(kernel);
  if (!nvrtcPresent())
    return;
  auto compiled = compileWithNvrtcOnThread(source, "mul_add.cu", targetNamed("sm_80"));
  REQUIRE(compiled);
  CHECK(contains(compiled->ptx, "mul.rn.f32"));
  CHECK_FALSE(contains(compiled->ptx, "fma.rn.f32"));
}
