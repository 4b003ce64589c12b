// Math and narrow-float casts for NVPTX: exp/log/tanh/erf/sin/cos/pow call
// libdevice (linked by NvptxCompile.cpp); f16 and bf16 convert with cvt.rn,
// fp8 with cvt.rn.satfinite on sm_89+ and an exact integer encoder elsewhere;
// f64 sources round to odd in f32 first, so every cast rounds exactly once.
#include "codegen/llvm/NvptxEmitter.h"

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cmath>

namespace kiln::codegen::nvptx {
namespace {

/// The libdevice function for `fn` (f32 variants end in 'f'), or nullptr when
/// the emitter's LLVM intrinsics already lower to correctly rounded PTX.
const char *libdeviceBaseName(kir::Intrinsic fn) {
  switch (fn) {
  case kir::Intrinsic::Exp: return "exp";
  case kir::Intrinsic::Log: return "log";
  case kir::Intrinsic::Tanh: return "tanh";
  case kir::Intrinsic::Erf: return "erf";
  case kir::Intrinsic::Sin: return "sin";
  case kir::Intrinsic::Cos: return "cos";
  case kir::Intrinsic::Pow: return "pow";
  default: return nullptr;
  }
}

/// An fp8 format's layout, as support/FloatConvert.cpp defines it (satfinite).
struct Fp8Format {
  int mantissaBits;
  int bias;
  uint32_t maxFiniteBits;
  uint32_t nanBits;
};

Fp8Format fp8Format(DType dtype) {
  if (dtype == DType::F8E4M3)
    return {3, 7, 0x7e, 0x7f};
  return {2, 15, 0x7b, 0x7e}; // f8e5m2: the quiet NaN S.11111.10
}

} // namespace

llvm::Value *
NvptxEmitter::perLane(std::vector<llvm::Value *> args, int lanes,
                      const std::function<llvm::Value *(std::vector<llvm::Value *>)> &scalar) {
  if (lanes == 1)
    return scalar(std::move(args));
  llvm::Value *result = nullptr;
  for (int lane = 0; lane < lanes; ++lane) {
    std::vector<llvm::Value *> elements;
    for (llvm::Value *arg : args)
      elements.push_back(builder_.CreateExtractElement(arg, lane));
    llvm::Value *element = scalar(std::move(elements));
    if (!result)
      result = llvm::PoisonValue::get(llvm::FixedVectorType::get(element->getType(), lanes));
    result = builder_.CreateInsertElement(result, element, lane);
  }
  return result;
}

Expected<llvm::Value *> NvptxEmitter::emitMath(kir::Intrinsic fn, kir::Type type,
                                               std::vector<llvm::Value *> args) {
  const char *base = libdeviceBaseName(fn);
  bool isFloat = type.dtype == DType::F32 || type.dtype == DType::F64;
  if (!base || !isFloat)
    // sqrt -> sqrt.rn, rsqrt -> div.rn(1, sqrt.rn), fma -> fma.rn, floor ->
    // cvt.rmi, abs: LLVM's intrinsics lower to correctly rounded PTX.
    return KernelEmitter::emitMath(fn, type, std::move(args));
  bool isF32 = type.dtype == DType::F32;
  llvm::Type *scalar = registerType(type.dtype);
  std::vector<llvm::Type *> params(args.size(), scalar);
  llvm::Function *function = declareRuntimeFunction(fmt::format("__nv_{}{}", base, isF32 ? "f" : ""),
                                                    scalar, params, /*pure=*/true);
  return perLane(std::move(args), type.lanes,
                 [&](std::vector<llvm::Value *> lane) { return builder_.CreateCall(function, lane); });
}

llvm::Value *NvptxEmitter::decodeNarrowFloat(llvm::Value *bits, DType dtype, int lanes) {
  llvm::Type *f32 = registerType(kir::Type{DType::F32, lanes});
  auto halfType = [&]() -> llvm::Type * {
    llvm::Type *half = builder_.getHalfTy();
    return lanes > 1 ? llvm::FixedVectorType::get(half, lanes) : half;
  };
  switch (dtype) {
  case DType::F16: return builder_.CreateFPExt(builder_.CreateBitCast(bits, halfType()), f32);
  case DType::F8E5M2: {
    // e5m2 is the top byte of an f16 (same exponent), so widening is exact.
    llvm::Type *i16 = registerType(kir::Type{DType::F16, lanes});
    llvm::Value *half = builder_.CreateShl(builder_.CreateZExt(bits, i16), 8);
    return builder_.CreateFPExt(builder_.CreateBitCast(half, halfType()), f32);
  }
  case DType::F8E4M3:
    return perLane({bits}, lanes, [&](std::vector<llvm::Value *> b) { return f8E4M3ToF32(b[0]); });
  default: return KernelEmitter::decodeNarrowFloat(bits, dtype, lanes); // bf16: a shift
  }
}

llvm::Value *NvptxEmitter::f8E4M3ToF32(llvm::Value *byte) {
  llvm::Type *i32 = builder_.getInt32Ty();
  auto constant = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  llvm::Value *b = builder_.CreateZExt(byte, i32);
  llvm::Value *sign = builder_.CreateShl(builder_.CreateAnd(b, constant(0x80)), 24);
  llvm::Value *exponent = builder_.CreateAnd(builder_.CreateLShr(b, 3), constant(0xf));
  llvm::Value *mantissa = builder_.CreateAnd(b, constant(7));
  // Normal: rebias 7 -> 127 and move the 3 mantissa bits to the top of 23.
  llvm::Value *normal = builder_.CreateOr(
      sign, builder_.CreateOr(builder_.CreateShl(builder_.CreateAdd(exponent, constant(120)), 23),
                              builder_.CreateShl(mantissa, 20)));
  // Subnormal: mantissa * 2^-9, exact in f32.
  llvm::Value *subnormalMagnitude = builder_.CreateFMul(
      builder_.CreateUIToFP(mantissa, builder_.getFloatTy()),
      llvm::ConstantFP::get(builder_.getFloatTy(), 1.0 / 512.0));
  llvm::Value *subnormal = builder_.CreateOr(sign, builder_.CreateBitCast(subnormalMagnitude, i32));
  llvm::Value *nan = builder_.CreateOr(sign, constant(0x7fc00000));
  llvm::Value *isNaN = builder_.CreateICmpEQ(builder_.CreateAnd(b, constant(0x7f)), constant(0x7f));
  llvm::Value *isSubnormal = builder_.CreateICmpEQ(exponent, constant(0));
  llvm::Value *result =
      builder_.CreateSelect(isNaN, nan, builder_.CreateSelect(isSubnormal, subnormal, normal));
  return builder_.CreateBitCast(result, builder_.getFloatTy());
}

llvm::Value *NvptxEmitter::roundToOddF32(llvm::Value *f64) {
  llvm::Value *truncated = builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_d2f_rz, {}, {f64});
  // Inexact (or NaN, where the last bit does not matter): set the sticky bit.
  llvm::Value *inexact =
      builder_.CreateFCmpUNE(builder_.CreateFPExt(truncated, builder_.getDoubleTy()), f64);
  llvm::Type *i32 = builder_.getInt32Ty();
  llvm::Value *bits = builder_.CreateOr(builder_.CreateBitCast(truncated, i32),
                                        builder_.CreateZExt(inexact, i32));
  return builder_.CreateBitCast(bits, builder_.getFloatTy());
}

llvm::Value *NvptxEmitter::f32ToF8(llvm::Value *f32, DType to) {
  if (gpu_.sm >= 89) {
    // cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 packs two values; the second
    // operand lands in the low byte. LLVM 19 has no intrinsic for it.
    const char *assembly = to == DType::F8E4M3 ? "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;"
                                               : "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;";
    llvm::Type *f32Type = builder_.getFloatTy();
    auto *type = llvm::FunctionType::get(builder_.getInt16Ty(), {f32Type, f32Type}, false);
    llvm::InlineAsm *cvt = llvm::InlineAsm::get(type, assembly, "=h,f,f", /*hasSideEffects=*/false);
    llvm::Value *pair = builder_.CreateCall(cvt, {llvm::ConstantFP::get(f32Type, 0.0), f32});
    return builder_.CreateTrunc(pair, builder_.getInt8Ty());
  }
  // Software, bit for bit as support/FloatConvert.cpp: round to nearest even,
  // NaN -> sign | NaN, +-inf and overflow -> +-max finite.
  Fp8Format format = fp8Format(to);
  int minNormalExponent = 1 - format.bias;
  int droppedBits = 23 - format.mantissaBits;
  llvm::Type *i32 = builder_.getInt32Ty();
  auto constant = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  llvm::Value *bits = builder_.CreateBitCast(f32, i32);
  llvm::Value *sign = builder_.CreateAnd(builder_.CreateLShr(bits, 24), constant(0x80));
  llvm::Value *magnitude = builder_.CreateAnd(bits, constant(0x7fffffff));
  llvm::Value *isNaN = builder_.CreateICmpUGT(magnitude, constant(0x7f800000));
  // In the fp8 normal range: rebias the exponent, round the mantissa to
  // nearest even on the integer bits (a carry moves into the exponent).
  llvm::Value *rebiased =
      builder_.CreateSub(magnitude, constant(static_cast<uint32_t>(127 - format.bias) << 23));
  llvm::Value *lowestKept = builder_.CreateAnd(builder_.CreateLShr(rebiased, droppedBits), constant(1));
  llvm::Value *normal = builder_.CreateLShr(
      builder_.CreateAdd(rebiased,
                         builder_.CreateAdd(lowestKept, constant((1u << (droppedBits - 1)) - 1))),
      droppedBits);
  // Below it: count subnormal quanta, an exact scaling then rint (even).
  llvm::Value *scaled = builder_.CreateFMul(
      builder_.CreateBitCast(magnitude, builder_.getFloatTy()),
      llvm::ConstantFP::get(builder_.getFloatTy(),
                            std::ldexp(1.0, format.mantissaBits - minNormalExponent)));
  llvm::Value *quanta = builder_.CreateFPToUI(
      builder_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, scaled), i32);
  llvm::Value *isNormal = builder_.CreateICmpUGE(
      magnitude, constant(static_cast<uint32_t>(127 + minNormalExponent) << 23));
  llvm::Value *encoded = builder_.CreateSelect(isNormal, normal, quanta);
  encoded = builder_.CreateSelect(builder_.CreateICmpUGT(encoded, constant(format.maxFiniteBits)),
                                  constant(format.maxFiniteBits), encoded);
  encoded = builder_.CreateSelect(isNaN, constant(format.nanBits), encoded);
  return builder_.CreateTrunc(builder_.CreateOr(sign, encoded), builder_.getInt8Ty());
}

llvm::Value *NvptxEmitter::encodeNarrowFloat(llvm::Value *value, DType from, DType to, int lanes) {
  if (from == DType::F64)
    value = perLane({value}, lanes, [&](std::vector<llvm::Value *> v) { return roundToOddF32(v[0]); });
  llvm::Type *halfBits = registerType(kir::Type{DType::F16, lanes});
  auto vectorOf = [&](llvm::Type *scalar) -> llvm::Type * {
    return lanes > 1 ? llvm::FixedVectorType::get(scalar, lanes) : scalar;
  };
  switch (to) {
  case DType::F16:
    return builder_.CreateBitCast(builder_.CreateFPTrunc(value, vectorOf(builder_.getHalfTy())),
                                  halfBits);
  case DType::BF16:
    if (gpu_.sm >= 80) // cvt.rn.bf16.f32
      return builder_.CreateBitCast(
          builder_.CreateFPTrunc(value, vectorOf(builder_.getBFloatTy())), halfBits);
    return KernelEmitter::encodeNarrowFloat(value, DType::F32, to, lanes);
  case DType::F8E4M3:
  case DType::F8E5M2:
    return perLane({value}, lanes, [&](std::vector<llvm::Value *> v) { return f32ToF8(v[0], to); });
  default: KILN_UNREACHABLE("not a narrow float");
  }
}

} // namespace kiln::codegen::nvptx
