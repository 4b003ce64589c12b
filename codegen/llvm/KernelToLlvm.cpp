// Kernel IR -> LLVM IR for the host: the module and function frame (types,
// entry blocks, attributes, runtime declarations, scratch memory). Statements,
// expressions and casts are in the KernelStmt/Expr/CastToLlvm files.
#include "codegen/llvm/KernelToLlvm.h"

#include "codegen/HostKernelAbi.h"
#include "codegen/llvm/HostTargetMachine.h"
#include "codegen/llvm/KernelEmitter.h"
#include "ir/kernel/Verifier.h"

#include <fmt/format.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstring>

namespace kiln::codegen::host {
namespace {

/// Local buffers up to this size live on the stack; larger ones on the heap,
/// so a big tile buffer cannot overflow a worker thread's stack.
constexpr int64_t kMaxStackScratchBytes = 128 << 10;

/// The alignment the executor guarantees for every kernel parameter.
constexpr uint64_t kParamAlignment = 64;

} // namespace

KernelEmitter::KernelEmitter(llvm::Module &module, const CpuTarget &target)
    : module_(module), context_(module.getContext()), builder_(module.getContext()),
      target_(&target), backendName_("host backend"),
      nativeHalf_(hasNativeHalfConversions(target)) {}

KernelEmitter::KernelEmitter(llvm::Module &module, std::string backendName, bool nativeHalf)
    : module_(module), context_(module.getContext()), builder_(module.getContext()),
      target_(nullptr), backendName_(std::move(backendName)), nativeHalf_(nativeHalf) {}

Error KernelEmitter::error(ErrorCode code, const std::string &message) const {
  return Error(code, fmt::format("{}: kernel '{}': {}", backendName_,
                                 kernel_ ? kernel_->name : "?", message));
}

llvm::Type *KernelEmitter::registerType(kir::Type type) {
  llvm::Type *scalar = nullptr;
  switch (type.dtype) {
  case DType::F64: scalar = builder_.getDoubleTy(); break;
  case DType::F32: scalar = builder_.getFloatTy(); break;
  // Narrow floats are held as their bit patterns; casts convert them.
  case DType::F16:
  case DType::BF16: scalar = builder_.getInt16Ty(); break;
  case DType::F8E4M3:
  case DType::F8E5M2: scalar = builder_.getInt8Ty(); break;
  case DType::I64: scalar = builder_.getInt64Ty(); break;
  case DType::I32: scalar = builder_.getInt32Ty(); break;
  case DType::I8: scalar = builder_.getInt8Ty(); break;
  case DType::Bool: scalar = builder_.getInt1Ty(); break;
  }
  KILN_CHECK(scalar, "unknown dtype");
  if (type.lanes > 1)
    return llvm::FixedVectorType::get(scalar, type.lanes);
  return scalar;
}

llvm::Type *KernelEmitter::memoryType(DType dtype) {
  if (dtype == DType::Bool)
    return builder_.getInt8Ty();
  return registerType(dtype);
}

void KernelEmitter::setFunctionAttributes(llvm::Function &function) {
  function.addFnAttr(llvm::Attribute::NoUnwind);
  KILN_CHECK(target_, "host function attributes without a CPU target");
  function.addFnAttr("target-cpu", target_->cpuName);
  if (!target_->features.empty())
    function.addFnAttr("target-features", target_->features);
  // Kernels never inspect FP exception flags, so LLVM may speculate FP ops
  // (needed to if-convert predicated code); results are unchanged.
  function.addFnAttr("no-trapping-math", "true");
}

void KernelEmitter::beginFunction(llvm::Function *function) {
  fn_ = FunctionState{};
  fn_.function = function;
  fn_.entry = llvm::BasicBlock::Create(context_, "entry", function);
  llvm::BasicBlock *body = llvm::BasicBlock::Create(context_, "body", function);
  builder_.SetInsertPoint(fn_.entry);
  builder_.CreateBr(body);
  builder_.SetInsertPoint(body);
}

void KernelEmitter::finishFunction() {
  if (!fn_.heapScratch.empty()) {
    llvm::Function *release = declareRuntimeFunction("kiln_cpu_scratch_free", builder_.getVoidTy(),
                                                     {builder_.getPtrTy()}, false);
    for (llvm::Value *pointer : fn_.heapScratch)
      builder_.CreateCall(release, {pointer});
  }
  builder_.CreateRetVoid();
}

llvm::Function *KernelEmitter::declareRuntimeFunction(const std::string &name, llvm::Type *result,
                                                      std::vector<llvm::Type *> params, bool pure) {
  if (llvm::Function *existing = module_.getFunction(name)) {
    KILN_CHECK(existing->getReturnType() == result && existing->arg_size() == params.size(),
               fmt::format("runtime function {} declared with two signatures", name));
    return existing;
  }
  auto *type = llvm::FunctionType::get(result, params, false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  if (pure) {
    // Pure in what a kernel can observe (libm's errno is never read).
    function->setDoesNotAccessMemory();
    function->addFnAttr(llvm::Attribute::WillReturn);
  }
  auto isSmallInt = [](llvm::Type *t) { return t->isIntegerTy() && t->getIntegerBitWidth() < 32; };
  if (isSmallInt(result))
    function->addRetAttr(llvm::Attribute::ZExt);
  for (unsigned i = 0; i < params.size(); ++i)
    if (isSmallInt(params[i]))
      function->addParamAttr(i, llvm::Attribute::ZExt);
  return function;
}

llvm::Value *KernelEmitter::allocateScratch(const kir::Buffer &buffer) {
  llvm::Type *element = memoryType(buffer.dtype);
  int64_t bytes = buffer.size * dtypeByteSize(buffer.dtype);
  llvm::IRBuilder<> entry(fn_.entry->getTerminator());
  if (bytes <= kMaxStackScratchBytes) {
    auto *array =
        llvm::ArrayType::get(element, static_cast<uint64_t>(std::max<int64_t>(buffer.size, 1)));
    llvm::AllocaInst *slot = entry.CreateAlloca(array, nullptr, buffer.name);
    slot->setAlignment(llvm::Align(kParamAlignment));
    return slot;
  }
  llvm::Function *acquire = declareRuntimeFunction("kiln_cpu_scratch_alloc", builder_.getPtrTy(),
                                                   {builder_.getInt64Ty()}, false);
  llvm::CallInst *pointer = entry.CreateCall(acquire, {entry.getInt64(bytes)}, buffer.name);
  pointer->addRetAttr(llvm::Attribute::NoAlias);
  pointer->addRetAttr(llvm::Attribute::getWithAlignment(context_, llvm::Align(kParamAlignment)));
  fn_.heapScratch.push_back(pointer);
  return pointer;
}

Expected<void> KernelEmitter::emitKernel(const kir::Kernel &kernel) {
  kernel_ = &kernel;
  if (kernel.name.empty())
    return makeError(ErrorCode::InvalidArgument, "host backend: a kernel has no name");
  std::string_view name = kernel.name;
  bool reserved = name.starts_with("kiln_cpu_") || name.starts_with("llvm.");
  for (const RuntimeSymbol &symbol : hostRuntimeSymbols())
    reserved = reserved || name == symbol.name;
  if (reserved)
    return fail(ErrorCode::InvalidArgument,
                "the name is reserved for a runtime or library function");
  if (module_.getFunction(kernel.name))
    return fail(ErrorCode::InvalidArgument,
                "another kernel or runtime function in the module has this name");
  if (!kernel.body)
    return fail(ErrorCode::InvalidArgument, "no body");
  // From here on the kernel is well formed: the emitter trusts the verifier.
  KILN_TRY_VOID(kir::verifyKernel(kernel));

  auto *type = llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getPtrTy()}, false);
  auto *function =
      llvm::Function::Create(type, llvm::Function::ExternalLinkage, kernel.name, module_);
  setFunctionAttributes(*function);
  llvm::Argument *args = function->getArg(0);
  args->setName("args");
  args->addAttr(llvm::Attribute::ReadOnly);
  args->addAttr(llvm::Attribute::NoCapture);
  args->addAttr(llvm::Attribute::NoUndef);

  beginFunction(function);
  llvm::MDNode *alignment = llvm::MDNode::get(
      context_, {llvm::ConstantAsMetadata::get(builder_.getInt64(kParamAlignment))});
  llvm::MDNode *empty = llvm::MDNode::get(context_, {});
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const kir::Buffer &param = *kernel.params[i];
    llvm::Value *slot = builder_.CreateConstInBoundsGEP1_64(builder_.getPtrTy(), args, i);
    llvm::LoadInst *base =
        builder_.CreateAlignedLoad(builder_.getPtrTy(), slot, llvm::Align(8), param.name);
    base->setMetadata(llvm::LLVMContext::MD_align, alignment);
    base->setMetadata(llvm::LLVMContext::MD_noundef, empty);
    fn_.buffers[&param] = base;
  }
  KILN_TRY_VOID(emitStmt(*kernel.body));
  finishFunction();
  return {};
}

Expected<std::unique_ptr<llvm::Module>> buildHostModule(std::span<const kir::Kernel> kernels,
                                                        const CpuTarget &target,
                                                        const llvm::TargetMachine &machine,
                                                        llvm::LLVMContext &context) {
  std::string moduleName = kernels.size() == 1 ? kernels.front().name : "kiln_host_module";
  auto module = std::make_unique<llvm::Module>(moduleName, context);
  module->setTargetTriple(machine.getTargetTriple().str());
  module->setDataLayout(machine.createDataLayout());
  KernelEmitter emitter(*module, target);
  for (const kir::Kernel &kernel : kernels)
    KILN_TRY_VOID(emitter.emitKernel(kernel));

  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(*module, &stream)) {
    stream.flush();
    // A module that does not verify is a bug in this emitter, but the kernel
    // is named and the run can go on with other backends, so it is an Error.
    return makeError(ErrorCode::VerifyError,
                     fmt::format("host backend: LLVM IR for kernel(s) {} does not verify: {}",
                                 moduleName, problems));
  }
  return module;
}

std::span<const RuntimeSymbol> hostRuntimeSymbols() {
  // libm entry points are named explicitly (not only found through the
  // process's symbol table), so a binary linked against a static libm works too.
  static const RuntimeSymbol symbols[] = {
      {"kiln_cpu_parallel_for", reinterpret_cast<void *>(&kiln_cpu_parallel_for)},
      {"kiln_cpu_scratch_alloc", reinterpret_cast<void *>(&kiln_cpu_scratch_alloc)},
      {"kiln_cpu_scratch_free", reinterpret_cast<void *>(&kiln_cpu_scratch_free)},
      {"kiln_cpu_f32_to_f8e4m3", reinterpret_cast<void *>(&kiln_cpu_f32_to_f8e4m3)},
      {"kiln_cpu_f64_to_f8e4m3", reinterpret_cast<void *>(&kiln_cpu_f64_to_f8e4m3)},
      {"kiln_cpu_f8e4m3_to_f32", reinterpret_cast<void *>(&kiln_cpu_f8e4m3_to_f32)},
      {"kiln_cpu_f32_to_f8e5m2", reinterpret_cast<void *>(&kiln_cpu_f32_to_f8e5m2)},
      {"kiln_cpu_f64_to_f8e5m2", reinterpret_cast<void *>(&kiln_cpu_f64_to_f8e5m2)},
      {"kiln_cpu_f8e5m2_to_f32", reinterpret_cast<void *>(&kiln_cpu_f8e5m2_to_f32)},
      {"kiln_cpu_f32_to_f16", reinterpret_cast<void *>(&kiln_cpu_f32_to_f16)},
      {"kiln_cpu_f64_to_f16", reinterpret_cast<void *>(&kiln_cpu_f64_to_f16)},
      {"kiln_cpu_f16_to_f32", reinterpret_cast<void *>(&kiln_cpu_f16_to_f32)},
      {"kiln_cpu_f64_to_bf16", reinterpret_cast<void *>(&kiln_cpu_f64_to_bf16)},
      {"tanhf", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::tanhf))},
      {"tanh", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::tanh))},
      {"erff", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::erff))},
      {"erf", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::erf))},
      {"expf", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::expf))},
      {"exp", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::exp))},
      {"logf", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::logf))},
      {"log", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::log))},
      {"sinf", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::sinf))},
      {"sin", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::sin))},
      {"cosf", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::cosf))},
      {"cos", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::cos))},
      {"powf", reinterpret_cast<void *>(static_cast<float (*)(float, float)>(&::powf))},
      {"pow", reinterpret_cast<void *>(static_cast<double (*)(double, double)>(&::pow))},
      // What LLVM itself may emit calls to: loop idioms, sin+cos pairs, and
      // fma/floor on CPUs without the instructions.
      {"sincosf", reinterpret_cast<void *>(&::sincosf)},
      {"sincos", reinterpret_cast<void *>(&::sincos)},
      {"fmaf", reinterpret_cast<void *>(static_cast<float (*)(float, float, float)>(&::fmaf))},
      {"fma", reinterpret_cast<void *>(static_cast<double (*)(double, double, double)>(&::fma))},
      {"floorf", reinterpret_cast<void *>(static_cast<float (*)(float)>(&::floorf))},
      {"floor", reinterpret_cast<void *>(static_cast<double (*)(double)>(&::floor))},
      {"memset", reinterpret_cast<void *>(&::memset)},
      {"memcpy", reinterpret_cast<void *>(&::memcpy)},
      {"memmove", reinterpret_cast<void *>(&::memmove)},
  };
  return symbols;
}

} // namespace kiln::codegen::host
