// GPU kernels -> LLVM IR for NVPTX: the kernel frame (global-pointer
// parameters, nvvm.annotations), block/thread loops read from ctaid/tid,
// shared and register allocations, barriers, atomics and warp shuffles.
#include "codegen/llvm/NvptxEmitter.h"

#include "ir/kernel/TensorMap.h"
#include "ir/kernel/Verifier.h"

#include "ir/kernel/IRUtils.h"
#include "ir/kernel/Visitor.h"

#include <fmt/format.h>
#include <llvm/IR/IntrinsicsNVPTX.h>


namespace kiln::codegen::nvptx {
namespace {

/// The alignment every kernel parameter has (cudaMalloc gives 256 bytes; the
/// executor's arenas keep at least 16), so 16-byte vector accesses are legal.
constexpr uint64_t kParamAlignment = 16;

llvm::Intrinsic::ID specialRegister(kir::ForKind kind) {
  switch (kind) {
  case kir::ForKind::BlockX: return llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x;
  case kir::ForKind::BlockY: return llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y;
  case kir::ForKind::BlockZ: return llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z;
  case kir::ForKind::ThreadX: return llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
  case kir::ForKind::ThreadY: return llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y;
  case kir::ForKind::ThreadZ: return llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z;
  default: KILN_UNREACHABLE("not a launch loop");
  }
}

} // namespace

NvptxEmitter::NvptxEmitter(llvm::Module &module, const GpuTarget &target)
    : KernelEmitter(module, "NVPTX backend", /*nativeHalf=*/true), gpu_(target) {}

Expected<void> NvptxEmitter::emitKernel(const kir::Kernel &kernel) {
  kernel_ = &kernel;
  if (kernel.name.empty())
    return makeError(ErrorCode::InvalidArgument, "NVPTX backend: a kernel has no name");
  std::string_view name = kernel.name;
  if (name.starts_with("__nv_") || name.starts_with("llvm.") || name.starts_with("__nvvm"))
    return fail(ErrorCode::InvalidArgument, "the name is reserved for libdevice or LLVM");
  if (module_.getFunction(kernel.name))
    return fail(ErrorCode::InvalidArgument, "another kernel in the module has this name");
  if (!kernel.body)
    return fail(ErrorCode::InvalidArgument, "no body");
  // From here on the kernel is well formed: the emitter trusts the verifier.
  KILN_TRY_VOID(kir::verifyKernel(kernel));
  auto launch = kir::gpuLaunchOf(kernel, gpu_.maxThreadsPerBlock);
  if (!launch)
    return fail(ErrorCode::VerifyError,
                fmt::format("not a GPU kernel: {}", launch.error().message()));
  launch_ = *launch;
  if (launch_.reservedSharedBytes() > gpu_.maxSharedBytesPerBlock())
    return fail(ErrorCode::Unsupported,
                fmt::format("uses {} bytes of shared memory; {} allows a block {}",
                            launch_.reservedSharedBytes(), gpu_.archName(),
                            gpu_.maxSharedBytesPerBlock()));
  llvm::Type *globalPointer = builder_.getPtrTy(kGlobalAddressSpace);
  std::vector<llvm::Type *> paramTypes(kernel.params.size(), globalPointer);
  // Tensor maps follow the buffers, 128 bytes by value each (grid constants, below).
  const std::vector<kir::TensorMapPtr> maps = kir::tensorMapsOf(kernel);
  paramTypes.insert(paramTypes.end(), maps.size(), builder_.getPtrTy());
  auto *type = llvm::FunctionType::get(builder_.getVoidTy(), paramTypes, false);
  auto *function =
      llvm::Function::Create(type, llvm::Function::ExternalLinkage, kernel.name, module_);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr("no-trapping-math", "true");
  beginFunction(function);
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    llvm::Argument *arg = function->getArg(static_cast<unsigned>(i));
    arg->setName(kernel.params[i]->name);
    // The executor never passes one allocation twice to a kernel.
    arg->addAttr(llvm::Attribute::NoAlias);
    arg->addAttr(llvm::Attribute::NoUndef);
    arg->addAttr(llvm::Attribute::getWithAlignment(context_, llvm::Align(kParamAlignment)));
    fn_.buffers[kernel.params[i].get()] = arg;
  }
  tensorMaps_.clear();
  llvm::Type *mapBytes = llvm::ArrayType::get(builder_.getInt8Ty(), 128);
  std::vector<llvm::Metadata *> gridConstants;
  for (size_t m = 0; m < maps.size(); ++m) {
    const unsigned index = static_cast<unsigned>(kernel.params.size() + m);
    llvm::Argument *arg = function->getArg(index);
    arg->setName(maps[m]->name);
    arg->addAttr(llvm::Attribute::getWithByValType(context_, mapBytes));
    // 128 as CUDA 13's CUtensorMap (the PTX ISA asks 64 of sm_90; later chips more).
    arg->addAttr(llvm::Attribute::getWithAlignment(context_, llvm::Align(128)));
    tensorMaps_[maps[m].get()] = arg;
    gridConstants.push_back(llvm::ConstantAsMetadata::get(builder_.getInt32(index + 1)));
  }
  KILN_TRY_VOID(emitStmt(*kernel.body));
  finishFunction();

  // The kernel entry and its block shape: ptxas sizes registers so that a
  // block of this many threads fits (.maxntid).
  llvm::NamedMDNode *annotations = module_.getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char *key, int64_t value) {
    annotations->addOperand(llvm::MDNode::get(
        context_, {llvm::ValueAsMetadata::get(function), llvm::MDString::get(context_, key),
                   llvm::ConstantAsMetadata::get(builder_.getInt32(static_cast<uint32_t>(value)))}));
  };
  annotate("kernel", 1);
  annotate("maxntidx", launch_.block[0]);
  annotate("maxntidy", launch_.block[1]);
  annotate("maxntidz", launch_.block[2]);
  if (kernel.minBlocksPerSm > 0)
    annotate("minctasm", kernel.minBlocksPerSm);
  // Grid constants are read in place in parameter space: a bulk copy takes their generic
  // address (cvta.param) instead of a local copy's. Indices count from 1.
  if (!gridConstants.empty())
    annotations->addOperand(llvm::MDNode::get(
        context_, {llvm::ValueAsMetadata::get(function),
                   llvm::MDString::get(context_, "grid_constant"),
                   llvm::MDNode::get(context_, gridConstants)}));
  return {};
}

Expected<void> NvptxEmitter::emitFor(const kir::For &loop) {
  if (kir::isLaunchLoop(loop.loopKind)) {
    // A launch dimension, not a loop: the grid has exactly `extent` blocks
    // (threads) along the axis, and gpuLaunchOf checked that it starts at 0.
    llvm::Value *index = builder_.CreateIntrinsic(specialRegister(loop.loopKind), {}, {});
    llvm::Value *var = builder_.CreateZExt(index, builder_.getInt64Ty(), loop.var->name);
    return emitScoped(fn_.vars, loop.var.get(), var, *loop.body);
  }
  KILN_TRY(llvm::Value * begin, emitExpr(*loop.begin));
  KILN_TRY(llvm::Value * extent, emitExpr(*loop.extent));
  llvm::Value *end = builder_.CreateAdd(begin, extent, loop.var->name + ".end", false, true);
  // A parallel loop inside one thread runs serially (its iterations are
  // independent, so the order is free); vectorized is a host notion.
  std::vector<llvm::Metadata *> properties;
  if (loop.loopKind == kir::ForKind::Unrolled)
    properties.push_back(
        llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.full")}));
  else if (kir::containsBarrier(loop.body))
    // A loop over barrier-separated phases (a GEMM's K tiles) stays a loop: once unrolled,
    // MachineSink moves each phase's arithmetic (the FMAs, whose results are only used later)
    // past the following barriers into the last phase, so every phase's shared-memory
    // fragments stay live at once and ptxas spills. Unrolling buys nothing across a barrier.
    properties.push_back(
        llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.disable")}));
  return emitCountedLoop(loop, begin, end, std::move(properties));
}

llvm::GlobalVariable *NvptxEmitter::dynamicShared() {
  constexpr std::string_view kName = "kiln_dynamic_smem";
  if (llvm::GlobalVariable *existing = module_.getNamedGlobal(kName))
    return existing;
  auto *array = llvm::ArrayType::get(builder_.getInt8Ty(), 0);
  auto *global = new llvm::GlobalVariable(module_, array, /*isConstant=*/false,
                                          llvm::GlobalValue::ExternalLinkage, nullptr, kName,
                                          nullptr, llvm::GlobalValue::NotThreadLocal,
                                          kSharedAddressSpace);
  global->setAlignment(llvm::Align(16));
  return global;
}

llvm::Value *NvptxEmitter::sharedBase() {
  llvm::Value *base = dynamicShared();
  int64_t align = launch_.sharedAlignment;
  if (align <= 16)
    return base;
  // A wgmma kernel's swizzle atoms need a 1024-byte aligned base: rounded up here, into the
  // slack the launch adds (GpuLaunch::sharedAlignment).
  llvm::Value *address = builder_.CreatePtrToInt(base, builder_.getInt32Ty());
  llvm::Value *toNext = builder_.CreateSub(builder_.getInt32(uint32_t(align)), address);
  llvm::Value *pad = builder_.CreateAnd(toNext, builder_.getInt32(uint32_t(align - 1)));
  return builder_.CreateInBoundsGEP(builder_.getInt8Ty(), base, {pad});
}

Expected<void> NvptxEmitter::emitAllocate(const kir::Allocate &allocate) {
  const kir::Buffer &buffer = *allocate.buffer;
  auto *array = llvm::ArrayType::get(memoryType(buffer.dtype),
                                     static_cast<uint64_t>(std::max<int64_t>(buffer.size, 1)));
  llvm::Value *pointer = nullptr;
  switch (buffer.scope) {
  case kir::MemScope::Shared: {
    if (launch_.dynamicShared()) {
      // Past the static limit: a slice of the dynamic shared memory the launch sizes, one
      // extern array (.extern .shared) that every kernel of the module shares.
      int64_t offset = launch_.sharedOffset(&buffer);
      KILN_CHECK(offset >= 0, "a shared buffer missing from the launch's layout");
      pointer = builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), sharedBase(),
                                                    static_cast<uint64_t>(offset));
      break;
    }
    // One per block: a module global in the shared state space, named
    // uniquely across every kernel of the module.
    auto *global = new llvm::GlobalVariable(
        module_, array, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(array),
        fmt::format("{}.{}.smem{}", kernel_->name, buffer.name, sharedBuffers_++), nullptr,
        llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
    global->setAlignment(llvm::Align(16));
    pointer = global;
    break;
  }
  case kir::MemScope::Local:
  case kir::MemScope::Register: {
    // Per thread: an alloca in the entry block, which SROA turns into
    // registers when every index is constant (else local memory).
    llvm::IRBuilder<> entry(fn_.entry->getTerminator());
    llvm::AllocaInst *slot = entry.CreateAlloca(array, nullptr, buffer.name);
    slot->setAlignment(llvm::Align(16));
    pointer = slot;
    break;
  }
  case kir::MemScope::Global:
    return fail(
        ErrorCode::VerifyError,
        fmt::format("buffer '{}': global buffers are parameters, not allocations", buffer.name));
  }
  return emitScoped(fn_.buffers, &buffer, pointer, *allocate.body);
}

llvm::Align NvptxEmitter::accessAlignment(const kir::Buffer &buffer, int lanes) {
  // A GPU kernel's vector access starts at a multiple of its lane count (the
  // simulator enforces it), so it is aligned to its whole width: one
  // ld.global.v4.f32 rather than four loads.
  int64_t element = dtypeByteSize(buffer.dtype);
  int64_t lanePower = lanes & -lanes; // largest power of two dividing lanes
  return llvm::Align(static_cast<uint64_t>(element * lanePower));
}

Expected<void> NvptxEmitter::emitTargetInstr(const kir::TargetInstr &instr) {
  switch (instr.op) {
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                \
  case kir::TargetOp::Op: return emit##Op(instr.view<kir::Op>());
#include "ir/kernel/TargetInstrs.def"
  }
  KILN_UNREACHABLE("target op");
}

Expected<void> NvptxEmitter::emitBarrier(const kir::Barrier &) {
  builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  return {};
}

Expected<void> NvptxEmitter::emitAtomic(const kir::Atomic &atomic) {
  const kir::Buffer &buffer = *atomic.buffer;
  bool isFloat = buffer.dtype == DType::F32 || buffer.dtype == DType::F64;
  bool isInt = buffer.dtype == DType::I32 || buffer.dtype == DType::I64;
  llvm::AtomicRMWInst::BinOp op;
  switch (atomic.op) {
  case kir::AtomicOp::Add:
    op = isFloat ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
    break;
  case kir::AtomicOp::Max: op = llvm::AtomicRMWInst::Max; break; // signed
  case kir::AtomicOp::Min: op = llvm::AtomicRMWInst::Min; break;
  }
  KILN_CHECK(isInt || (isFloat && atomic.op == kir::AtomicOp::Add),
             "the verifier admits atomics on the dtypes they are defined on only");
  KILN_TRY(llvm::Value * pointer, elementPointer(buffer, *atomic.index));
  KILN_TRY(llvm::Value * value, emitExpr(*atomic.value));
  builder_.CreateAtomicRMW(op, pointer, value, llvm::Align(dtypeByteSize(buffer.dtype)),
                           llvm::AtomicOrdering::Monotonic);
  return {};
}

llvm::Value *NvptxEmitter::activeLaneMask() {
  int64_t threads = launch_.threadsPerBlock();
  if (threads % 32 == 0)
    return builder_.getInt32(0xffffffffu);
  // The last warp of the block is partial: shfl.sync must name only lanes
  // that exist. A thread's lane is its linear index (x fastest) mod 32.
  auto tid = [&](llvm::Intrinsic::ID id) { return builder_.CreateIntrinsic(id, {}, {}); };
  auto bx = static_cast<uint32_t>(launch_.block[0]);
  auto bxy = static_cast<uint32_t>(launch_.block[0] * launch_.block[1]);
  llvm::Value *linear = builder_.CreateAdd(
      tid(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x),
      builder_.CreateAdd(
          builder_.CreateMul(tid(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y), builder_.getInt32(bx)),
          builder_.CreateMul(tid(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z),
                             builder_.getInt32(bxy))));
  llvm::Value *warpStart = builder_.CreateAnd(linear, builder_.getInt32(~31u));
  llvm::Value *remaining =
      builder_.CreateSub(builder_.getInt32(static_cast<uint32_t>(threads)), warpStart);
  llvm::Value *partial = builder_.CreateSub(
      builder_.CreateShl(builder_.getInt32(1), remaining), builder_.getInt32(1));
  return builder_.CreateSelect(builder_.CreateICmpUGE(remaining, builder_.getInt32(32)),
                               builder_.getInt32(0xffffffffu), partial);
}

Expected<llvm::Value *> NvptxEmitter::emitShuffle(const kir::Shuffle &shuffle) {
  kir::Type type = shuffle.value->type();
  DType dtype = type.dtype;
  KILN_TRY(llvm::Value * value, emitExpr(*shuffle.value));
  KILN_TRY(llvm::Value * lane, emitExpr(*shuffle.lane));
  llvm::Value *mask = activeLaneMask();

  // The clamp operand: 31 makes Down past lane 31 and Xor/Idx stay in the
  // warp; 0 makes Up below lane 0 read the thread's own value.
  llvm::Intrinsic::ID i32Id, f32Id;
  uint32_t clamp = 0x1f;
  switch (shuffle.mode) {
  case kir::ShuffleMode::Xor:
    i32Id = llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
    f32Id = llvm::Intrinsic::nvvm_shfl_sync_bfly_f32;
    break;
  case kir::ShuffleMode::Down:
    i32Id = llvm::Intrinsic::nvvm_shfl_sync_down_i32;
    f32Id = llvm::Intrinsic::nvvm_shfl_sync_down_f32;
    break;
  case kir::ShuffleMode::Up:
    i32Id = llvm::Intrinsic::nvvm_shfl_sync_up_i32;
    f32Id = llvm::Intrinsic::nvvm_shfl_sync_up_f32;
    clamp = 0;
    break;
  case kir::ShuffleMode::Idx:
    i32Id = llvm::Intrinsic::nvvm_shfl_sync_idx_i32;
    f32Id = llvm::Intrinsic::nvvm_shfl_sync_idx_f32;
    break;
  }
  auto shuffle32 = [&](llvm::Value *word, bool isFloat) -> llvm::Value * {
    return builder_.CreateIntrinsic(isFloat ? f32Id : i32Id, {},
                                    {mask, word, lane, builder_.getInt32(clamp)});
  };
  if (dtype == DType::I32)
    return shuffle32(value, false);
  if (dtype == DType::F32)
    return shuffle32(value, true);
  // 64-bit values move as two 32-bit halves from the same source lane.
  llvm::Type *i64 = builder_.getInt64Ty();
  llvm::Type *i32 = builder_.getInt32Ty();
  llvm::Value *bits = dtype == DType::F64 ? builder_.CreateBitCast(value, i64) : value;
  llvm::Value *low = shuffle32(builder_.CreateTrunc(bits, i32), false);
  llvm::Value *high = shuffle32(builder_.CreateTrunc(builder_.CreateLShr(bits, 32), i32), false);
  llvm::Value *joined = builder_.CreateOr(builder_.CreateZExt(low, i64),
                                          builder_.CreateShl(builder_.CreateZExt(high, i64), 32));
  return dtype == DType::F64 ? builder_.CreateBitCast(joined, builder_.getDoubleTy()) : joined;
}

} // namespace kiln::codegen::nvptx
