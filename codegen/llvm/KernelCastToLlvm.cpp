// Kernel IR casts -> LLVM IR with the graph's cast semantics: floats round to
// nearest even (f8 saturating), float -> int truncates and saturates with NaN
// -> 0, int -> int wraps, anything -> bool is "!= 0". Narrow floats are held
// as bits: f16 converts with the half type where the CPU has instructions for
// it, bf16 with integer arithmetic, fp8 through the runtime's helpers.
#include "codegen/llvm/KernelEmitter.h"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

namespace kiln::codegen::host {
namespace {

bool isWideFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

} // namespace

llvm::Value *KernelEmitter::decodeNarrowFloat(llvm::Value *bits, DType dtype, int lanes) {
  llvm::Type *f32 = registerType(kir::Type{DType::F32, lanes});
  switch (dtype) {
  case DType::F16:
    if (nativeHalf_) {
      llvm::Type *half = builder_.getHalfTy();
      if (lanes > 1)
        half = llvm::FixedVectorType::get(half, lanes);
      return builder_.CreateFPExt(builder_.CreateBitCast(bits, half), f32);
    }
    return callPerLane(declareRuntimeFunction("kiln_cpu_f16_to_f32", builder_.getFloatTy(),
                                              {builder_.getInt16Ty()}, true),
                       bits, lanes);
  case DType::BF16: {
    // bf16 is the top half of an f32: widening is a shift, exact, NaN payload kept.
    llvm::Type *i32 = registerType(kir::Type{DType::I32, lanes});
    llvm::Value *wide = builder_.CreateShl(builder_.CreateZExt(bits, i32), 16);
    return builder_.CreateBitCast(wide, f32);
  }
  case DType::F8E4M3:
  case DType::F8E5M2: {
    const char *name = dtype == DType::F8E4M3 ? "kiln_cpu_f8e4m3_to_f32" : "kiln_cpu_f8e5m2_to_f32";
    return callPerLane(
        declareRuntimeFunction(name, builder_.getFloatTy(), {builder_.getInt8Ty()}, true), bits,
        lanes);
  }
  default: KILN_UNREACHABLE("not a narrow float");
  }
}

llvm::Value *KernelEmitter::encodeNarrowFloat(llvm::Value *value, DType from, DType to, int lanes) {
  bool fromF32 = from == DType::F32;
  llvm::Type *source = registerType(from);
  auto helper = [&](const char *name, llvm::Type *result) {
    return callPerLane(declareRuntimeFunction(name, result, {source}, true), value, lanes);
  };
  switch (to) {
  case DType::F16:
    if (fromF32 && nativeHalf_) {
      llvm::Type *half = builder_.getHalfTy();
      if (lanes > 1)
        half = llvm::FixedVectorType::get(half, lanes);
      return builder_.CreateBitCast(builder_.CreateFPTrunc(value, half),
                                    registerType(kir::Type{DType::F16, lanes}));
    }
    // f64 -> f16 through f32 would round twice; the helper rounds once.
    return helper(fromF32 ? "kiln_cpu_f32_to_f16" : "kiln_cpu_f64_to_f16", builder_.getInt16Ty());
  case DType::BF16: {
    if (!fromF32)
      return helper("kiln_cpu_f64_to_bf16", builder_.getInt16Ty());
    // Round to nearest even on the f32 bits: add 0x7fff plus the lowest kept
    // bit, then drop the low half. A carry into the exponent is the correct
    // rounding up (to infinity past the largest bf16). NaN becomes the
    // canonical quiet NaN with its sign, as support/FloatConvert does.
    llvm::Type *i32 = registerType(kir::Type{DType::I32, lanes});
    llvm::Type *i16 = registerType(kir::Type{DType::BF16, lanes});
    auto constant = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
    llvm::Value *bits = builder_.CreateBitCast(value, i32);
    llvm::Value *high = builder_.CreateLShr(bits, 16);
    llvm::Value *lowestKept = builder_.CreateAnd(high, constant(1));
    llvm::Value *rounded = builder_.CreateLShr(
        builder_.CreateAdd(bits, builder_.CreateAdd(lowestKept, constant(0x7fff))), 16);
    llvm::Value *nan =
        builder_.CreateOr(builder_.CreateAnd(high, constant(0x8000)), constant(0x7fc0));
    llvm::Value *isNaN = builder_.CreateFCmpUNO(value, value);
    return builder_.CreateTrunc(builder_.CreateSelect(isNaN, nan, rounded), i16);
  }
  case DType::F8E4M3:
    return helper(fromF32 ? "kiln_cpu_f32_to_f8e4m3" : "kiln_cpu_f64_to_f8e4m3",
                  builder_.getInt8Ty());
  case DType::F8E5M2:
    return helper(fromF32 ? "kiln_cpu_f32_to_f8e5m2" : "kiln_cpu_f64_to_f8e5m2",
                  builder_.getInt8Ty());
  default: KILN_UNREACHABLE("not a narrow float");
  }
}

Expected<llvm::Value *> KernelEmitter::emitCast(llvm::Value *value, kir::Type from, kir::Type to) {
  int lanes = to.lanes;
  DType source = from.dtype;
  DType target = to.dtype;
  if (source == target)
    return value;
  llvm::Type *result = registerType(to);

  // Narrow sources widen to f32 exactly; everything after is one rounding.
  if (kir::isNarrowFloat(source)) {
    value = decodeNarrowFloat(value, source, lanes);
    source = DType::F32;
    if (target == DType::F32)
      return value;
  }
  if (kir::isNarrowFloat(target)) {
    if (isInteger(source)) {
      // Through f64, as the reference holds every value: i8/i32 exactly, i64
      // rounded once, then one rounding to the narrow format.
      value = builder_.CreateSIToFP(value, registerType(kir::Type{DType::F64, lanes}));
      source = DType::F64;
    } else if (source == DType::Bool) {
      value = builder_.CreateUIToFP(value, registerType(kir::Type{DType::F32, lanes}));
      source = DType::F32;
    }
    return encodeNarrowFloat(value, source, target, lanes);
  }

  bool sourceFloat = isWideFloat(source);
  bool targetFloat = isWideFloat(target);
  if (sourceFloat && targetFloat)
    return target == DType::F64 ? builder_.CreateFPExt(value, result)
                                : builder_.CreateFPTrunc(value, result);
  if (sourceFloat && isInteger(target))
    // Truncates toward zero, saturates at the type's range, NaN -> 0.
    return builder_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {result, value->getType()},
                                    {value});
  if (sourceFloat && target == DType::Bool)
    return builder_.CreateFCmpUNE(value, llvm::Constant::getNullValue(value->getType()));
  if (isInteger(source) && targetFloat)
    return builder_.CreateSIToFP(value, result);
  if (source == DType::Bool && targetFloat)
    return builder_.CreateUIToFP(value, result);
  if (isInteger(source) && isInteger(target))
    return builder_.CreateSExtOrTrunc(value, result); // wraps
  if (source == DType::Bool && isInteger(target))
    return builder_.CreateZExt(value, result);
  if (isInteger(source) && target == DType::Bool)
    return builder_.CreateICmpNE(value, llvm::Constant::getNullValue(value->getType()));
  return fail(ErrorCode::Unsupported,
              fmt::format("cast from {} to {}", dtypeName(from.dtype), dtypeName(to.dtype)));
}

} // namespace kiln::codegen::host
