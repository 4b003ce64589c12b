// Kernel IR expressions -> LLVM IR: constants, arithmetic with the graph's
// semantics (NaN-propagating min/max, division that never traps), loads
// (predicated ones masked or branched), intrinsic calls and broadcasts.
#include "codegen/llvm/KernelEmitter.h"

#include "support/FloatConvert.h"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

namespace kiln::codegen::host {
namespace {

std::string typeName(kir::Type type) {
  if (type.lanes == 1)
    return std::string(dtypeName(type.dtype));
  return fmt::format("{}x{}", dtypeName(type.dtype), type.lanes);
}

bool isWideFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

/// The bit pattern of `value` rounded to a narrow float dtype.
uint64_t narrowFloatBits(double value, DType dtype) {
  switch (dtype) {
  case DType::F16: return doubleToHalfBits(value);
  case DType::BF16: return doubleToBFloat16Bits(value);
  case DType::F8E4M3: return doubleToF8E4M3Bits(value);
  case DType::F8E5M2: return doubleToF8E5M2Bits(value);
  default: KILN_UNREACHABLE("not a narrow float");
  }
}

} // namespace

Expected<llvm::Value *> KernelEmitter::emitExpr(const kir::Expr &expr) {
  using kir::as;
  switch (expr.kind()) {
  case kir::ExprKind::IntImm:
  case kir::ExprKind::FloatImm: return emitConstant(expr);
  case kir::ExprKind::VarRef: {
    const kir::Var *var = as<kir::VarRef>(expr)->var.get();
    auto it = fn_.vars.find(var);
    KILN_CHECK(it != fn_.vars.end(), "the verifier admits only variables in scope");
    return it->second;
  }
  case kir::ExprKind::Unary: return emitUnary(*as<kir::Unary>(expr));
  case kir::ExprKind::Binary: return emitBinary(*as<kir::Binary>(expr));
  case kir::ExprKind::Select: {
    const auto &select = *as<kir::Select>(expr);
    KILN_TRY(llvm::Value * cond, emitExpr(*select.cond));
    KILN_TRY(llvm::Value * onTrue, emitExpr(*select.onTrue));
    KILN_TRY(llvm::Value * onFalse, emitExpr(*select.onFalse));
    return builder_.CreateSelect(cond, onTrue, onFalse);
  }
  case kir::ExprKind::Cast: {
    const auto &cast = *as<kir::Cast>(expr);
    KILN_TRY(llvm::Value * value, emitExpr(*cast.value));
    return emitCast(value, cast.value->type(), cast.type());
  }
  case kir::ExprKind::Load: return emitLoad(*as<kir::Load>(expr));
  case kir::ExprKind::Call: return emitCall(*as<kir::Call>(expr));
  case kir::ExprKind::Broadcast: {
    const auto &broadcast = *as<kir::Broadcast>(expr);
    KILN_TRY(llvm::Value * value, emitExpr(*broadcast.value));
    if (broadcast.type().lanes == 1)
      return value;
    return builder_.CreateVectorSplat(broadcast.type().lanes, value);
  }
  case kir::ExprKind::Shuffle: return emitShuffle(*as<kir::Shuffle>(expr));
  }
  KILN_UNREACHABLE("expression kind");
}

Expected<llvm::Value *> KernelEmitter::emitShuffle(const kir::Shuffle &) {
  KILN_UNREACHABLE("the verifier admits shuffles only in thread loops, which the host refuses");
}

llvm::Align KernelEmitter::accessAlignment(const kir::Buffer &buffer, int) {
  // The host's vector accesses may start at any element.
  return llvm::Align(dtypeByteSize(buffer.dtype));
}

Expected<llvm::Value *> KernelEmitter::emitConstant(const kir::Expr &expr) {
  kir::Type type = expr.type();
  llvm::Type *llvmType = registerType(type);
  if (auto imm = kir::as<kir::IntImm>(expr)) {
    int64_t value = type.dtype == DType::Bool ? (imm->value != 0) : imm->value;
    return llvm::ConstantInt::get(llvmType, static_cast<uint64_t>(value), /*isSigned=*/true);
  }
  double value = kir::as<kir::FloatImm>(expr)->value;
  if (isWideFloat(type.dtype))
    return llvm::ConstantFP::get(llvmType, value);
  return llvm::ConstantInt::get(llvmType, narrowFloatBits(value, type.dtype));
}

Expected<llvm::Value *> KernelEmitter::emitUnary(const kir::Unary &unary) {
  kir::Type type = unary.operand->type();
  KILN_TRY(llvm::Value * operand, emitExpr(*unary.operand));
  if (unary.op == kir::UnaryOp::Neg) {
    if (isWideFloat(type.dtype))
      return builder_.CreateFNeg(operand);
    if (isInteger(type.dtype))
      return builder_.CreateNeg(operand); // wraps: -INT_MIN == INT_MIN
  } else if (isInteger(type.dtype) || type.dtype == DType::Bool) {
    return builder_.CreateNot(operand); // logical for bool, bitwise for ints
  }
  return fail(
      ErrorCode::Unsupported,
      fmt::format("{} of {}", unary.op == kir::UnaryOp::Neg ? "negation" : "not", typeName(type)));
}

Expected<llvm::Value *> KernelEmitter::emitBinary(const kir::Binary &binary) {
  kir::Type type = binary.lhs->type();
  if (kir::isNarrowFloat(type.dtype))
    return fail(ErrorCode::Unsupported,
                fmt::format("arithmetic on {}: narrow floats appear only in loads, stores and "
                            "casts (compute in f32)",
                            typeName(type)));
  KILN_TRY(llvm::Value * a, emitExpr(*binary.lhs));
  KILN_TRY(llvm::Value * b, emitExpr(*binary.rhs));
  if (isWideFloat(type.dtype))
    return emitFloatBinary(binary.op, a, b);
  return emitIntegerBinary(binary.op, binary, a, b);
}

Expected<llvm::Value *> KernelEmitter::emitFloatBinary(kir::BinaryOp op, llvm::Value *a,
                                                       llvm::Value *b) {
  using kir::BinaryOp;
  auto propagateNaN = [&](llvm::Value *result) {
    // The graph's max/min return NaN when either operand is NaN (IEEE maxNum
    // would drop it); otherwise `a > b ? a : b` exactly, signed zeros included.
    llvm::Value *unordered = builder_.CreateFCmpUNO(a, b);
    return builder_.CreateSelect(unordered, llvm::ConstantFP::getQNaN(a->getType()), result);
  };
  switch (op) {
  case BinaryOp::Add: return builder_.CreateFAdd(a, b);
  case BinaryOp::Sub: return builder_.CreateFSub(a, b);
  case BinaryOp::Mul: return builder_.CreateFMul(a, b);
  case BinaryOp::Div: return builder_.CreateFDiv(a, b);
  case BinaryOp::Mod: return builder_.CreateFRem(a, b); // C fmod
  case BinaryOp::Min:
    return propagateNaN(builder_.CreateSelect(builder_.CreateFCmpOLT(a, b), a, b));
  case BinaryOp::Max:
    return propagateNaN(builder_.CreateSelect(builder_.CreateFCmpOGT(a, b), a, b));
  case BinaryOp::Eq: return builder_.CreateFCmpOEQ(a, b);
  case BinaryOp::Ne: return builder_.CreateFCmpUNE(a, b); // NaN != x is true, as in C
  case BinaryOp::Lt: return builder_.CreateFCmpOLT(a, b);
  case BinaryOp::Le: return builder_.CreateFCmpOLE(a, b);
  case BinaryOp::Gt: return builder_.CreateFCmpOGT(a, b);
  case BinaryOp::Ge: return builder_.CreateFCmpOGE(a, b);
  case BinaryOp::And:
  case BinaryOp::Or: KILN_UNREACHABLE("the verifier refuses and/or of floats");
  }
  KILN_UNREACHABLE("binary op");
}

Expected<llvm::Value *> KernelEmitter::emitIntegerBinary(kir::BinaryOp op,
                                                         const kir::Binary &binary, llvm::Value *a,
                                                         llvm::Value *b) {
  using kir::BinaryOp;
  // bool orders false < true: compare unsigned (as i1, true is -1 signed).
  bool isBool = binary.lhs->type().dtype == DType::Bool;
  switch (op) {
  case BinaryOp::Add: return builder_.CreateAdd(a, b); // wraps, as the graph's integers do
  case BinaryOp::Sub: return builder_.CreateSub(a, b);
  case BinaryOp::Mul: return builder_.CreateMul(a, b);
  case BinaryOp::Div:
  case BinaryOp::Mod: {
    KILN_CHECK(!isBool, "the verifier refuses division of bools");
    bool isDiv = op == BinaryOp::Div;
    auto *constant = llvm::dyn_cast<llvm::Constant>(b);
    if (constant && !constant->isNullValue() && !constant->isAllOnesValue())
      return isDiv ? builder_.CreateSDiv(a, b) : builder_.CreateSRem(a, b);
    // x / 0 and x / -1 would trap (or be undefined); the graph defines
    // x / 0 = 0, x / -1 = -x (wrapping), and x % 0 = x % -1 = 0.
    llvm::Type *type = a->getType();
    llvm::Value *isZero = builder_.CreateICmpEQ(b, llvm::Constant::getNullValue(type));
    llvm::Value *isMinusOne = builder_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(type));
    llvm::Value *safe = builder_.CreateSelect(builder_.CreateOr(isZero, isMinusOne),
                                              llvm::ConstantInt::get(type, 1), b);
    if (!isDiv)
      return builder_.CreateSRem(a, safe);
    llvm::Value *quotient = builder_.CreateSDiv(a, safe);
    quotient = builder_.CreateSelect(isMinusOne, builder_.CreateNeg(a), quotient);
    return builder_.CreateSelect(isZero, llvm::Constant::getNullValue(type), quotient);
  }
  case BinaryOp::Min:
    return builder_.CreateSelect(
        isBool ? builder_.CreateICmpULT(a, b) : builder_.CreateICmpSLT(a, b), a, b);
  case BinaryOp::Max:
    return builder_.CreateSelect(
        isBool ? builder_.CreateICmpUGT(a, b) : builder_.CreateICmpSGT(a, b), a, b);
  case BinaryOp::Eq: return builder_.CreateICmpEQ(a, b);
  case BinaryOp::Ne: return builder_.CreateICmpNE(a, b);
  case BinaryOp::Lt: return isBool ? builder_.CreateICmpULT(a, b) : builder_.CreateICmpSLT(a, b);
  case BinaryOp::Le: return isBool ? builder_.CreateICmpULE(a, b) : builder_.CreateICmpSLE(a, b);
  case BinaryOp::Gt: return isBool ? builder_.CreateICmpUGT(a, b) : builder_.CreateICmpSGT(a, b);
  case BinaryOp::Ge: return isBool ? builder_.CreateICmpUGE(a, b) : builder_.CreateICmpSGE(a, b);
  case BinaryOp::And: return builder_.CreateAnd(a, b);
  case BinaryOp::Or: return builder_.CreateOr(a, b);
  }
  KILN_UNREACHABLE("binary op");
}

Expected<llvm::Value *> KernelEmitter::elementPointer(const kir::Buffer &buffer,
                                                      const kir::Expr &index) {
  auto it = fn_.buffers.find(&buffer);
  KILN_CHECK(it != fn_.buffers.end(), "the verifier admits only buffers in scope");
  KILN_TRY(llvm::Value * offset, emitExpr(index));
  return builder_.CreateInBoundsGEP(memoryType(buffer.dtype), it->second, offset);
}

Expected<llvm::Value *> KernelEmitter::laneMask(const kir::Expr &predicate, int lanes) {
  KILN_TRY(llvm::Value * mask, emitExpr(predicate));
  if (predicate.type().lanes == 1)
    mask = builder_.CreateVectorSplat(lanes, mask);
  return mask;
}

llvm::Value *KernelEmitter::toMemory(llvm::Value *value, kir::Type type) {
  if (type.dtype != DType::Bool)
    return value;
  kir::Type bytes{DType::I8, type.lanes};
  return builder_.CreateZExt(value, registerType(bytes));
}

llvm::Value *KernelEmitter::fromMemory(llvm::Value *value, kir::Type type) {
  if (type.dtype != DType::Bool)
    return value;
  return builder_.CreateICmpNE(value, llvm::Constant::getNullValue(value->getType()));
}

Expected<llvm::Value *> KernelEmitter::emitLoad(const kir::Load &load) {
  kir::Type type = load.type();
  llvm::Type *element = memoryType(type.dtype);
  llvm::Type *loaded = type.lanes > 1 ? llvm::FixedVectorType::get(element, type.lanes) : element;
  llvm::Align align = accessAlignment(*load.buffer, type.lanes);
  if (!load.predicate) {
    KILN_TRY(llvm::Value * pointer, elementPointer(*load.buffer, *load.index));
    llvm::LoadInst *value = builder_.CreateAlignedLoad(loaded, pointer, align);
    markParallelAccess(value);
    return fromMemory(value, type);
  }
  llvm::Value *zero = llvm::Constant::getNullValue(loaded);
  if (type.lanes > 1) {
    KILN_TRY(llvm::Value * mask, laneMask(*load.predicate, type.lanes));
    KILN_TRY(llvm::Value * pointer, elementPointer(*load.buffer, *load.index));
    llvm::CallInst *value = builder_.CreateMaskedLoad(loaded, pointer, align, mask, zero);
    markParallelAccess(value);
    return fromMemory(value, type);
  }
  // A branch, so that not even the address is computed when the predicate is false.
  KILN_TRY(llvm::Value * predicate, emitExpr(*load.predicate));
  llvm::BasicBlock *skip = builder_.GetInsertBlock();
  auto *read = llvm::BasicBlock::Create(context_, "load.then", fn_.function);
  auto *done = llvm::BasicBlock::Create(context_, "load.done", fn_.function);
  builder_.CreateCondBr(predicate, read, done);
  builder_.SetInsertPoint(read);
  KILN_TRY(llvm::Value * pointer, elementPointer(*load.buffer, *load.index));
  llvm::LoadInst *value = builder_.CreateAlignedLoad(loaded, pointer, align);
  markParallelAccess(value);
  llvm::BasicBlock *readEnd = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  llvm::PHINode *merged = builder_.CreatePHI(loaded, 2);
  merged->addIncoming(zero, skip);
  merged->addIncoming(value, readEnd);
  return fromMemory(merged, type);
}

llvm::Value *KernelEmitter::callPerLane(llvm::Function *function, llvm::Value *value, int lanes) {
  if (lanes == 1)
    return builder_.CreateCall(function, {value});
  llvm::Value *result =
      llvm::PoisonValue::get(llvm::FixedVectorType::get(function->getReturnType(), lanes));
  for (int lane = 0; lane < lanes; ++lane) {
    llvm::Value *element = builder_.CreateExtractElement(value, lane);
    result = builder_.CreateInsertElement(result, builder_.CreateCall(function, {element}), lane);
  }
  return result;
}

Expected<llvm::Value *> KernelEmitter::emitCall(const kir::Call &call) {
  kir::Type type = call.type();
  // The verifier admits intrinsics of floats and abs of integers.
  if (kir::isNarrowFloat(type.dtype))
    return fail(ErrorCode::Unsupported,
                fmt::format("{} of {}: narrow floats appear only in loads, stores and casts "
                            "(compute in f32)",
                            kir::intrinsicName(call.fn), typeName(type)));

  std::vector<llvm::Value *> args;
  for (const auto &arg : call.args) {
    KILN_TRY(llvm::Value * value, emitExpr(*arg));
    args.push_back(value);
  }
  return emitMath(call.fn, type, std::move(args));
}

Expected<llvm::Value *> KernelEmitter::emitMath(kir::Intrinsic fn, kir::Type type,
                                                std::vector<llvm::Value *> args) {
  using kir::Intrinsic;
  bool isFloat = isWideFloat(type.dtype);
  llvm::Type *llvmType = registerType(type);
  auto intrinsic = [&](llvm::Intrinsic::ID id) -> llvm::Value * {
    return builder_.CreateIntrinsic(id, {llvmType}, args);
  };
  // No LLVM intrinsic for tanh and erf: call libm lane by lane.
  auto libm = [&](const char *f32Name, const char *f64Name) -> llvm::Value * {
    llvm::Type *scalar = registerType(type.dtype);
    bool isF32 = type.dtype == DType::F32;
    llvm::Function *function =
        declareRuntimeFunction(isF32 ? f32Name : f64Name, scalar, {scalar}, /*pure=*/true);
    return callPerLane(function, args[0], type.lanes);
  };
  switch (fn) {
  case Intrinsic::Exp: return intrinsic(llvm::Intrinsic::exp);
  case Intrinsic::Log: return intrinsic(llvm::Intrinsic::log);
  case Intrinsic::Sqrt: return intrinsic(llvm::Intrinsic::sqrt);
  case Intrinsic::Rsqrt:
    // Two correctly rounded steps, as the reference computes it (no rsqrtps estimate).
    return builder_.CreateFDiv(llvm::ConstantFP::get(llvmType, 1.0),
                               intrinsic(llvm::Intrinsic::sqrt));
  case Intrinsic::Tanh: return libm("tanhf", "tanh");
  case Intrinsic::Erf: return libm("erff", "erf");
  case Intrinsic::Sin: return intrinsic(llvm::Intrinsic::sin);
  case Intrinsic::Cos: return intrinsic(llvm::Intrinsic::cos);
  case Intrinsic::Abs:
    if (isFloat)
      return intrinsic(llvm::Intrinsic::fabs);
    // Wraps: abs(INT_MIN) == INT_MIN, as the graph's integers do.
    return builder_.CreateIntrinsic(llvm::Intrinsic::abs, {llvmType},
                                    {args[0], builder_.getFalse()});
  case Intrinsic::Floor: return intrinsic(llvm::Intrinsic::floor);
  case Intrinsic::Pow: return intrinsic(llvm::Intrinsic::pow);
  case Intrinsic::Fma: return intrinsic(llvm::Intrinsic::fma);
  }
  KILN_UNREACHABLE("intrinsic");
}

} // namespace kiln::codegen::host
