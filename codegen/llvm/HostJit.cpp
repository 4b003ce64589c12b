// The host backend's driver: builds the LLVM module for a set of kernels, runs
// the O3 pipeline for the target CPU, emits a relocatable object, and JIT-links
// objects with ORC LLJIT (runtime helpers and libm bound as absolute symbols).
#include "codegen/llvm/HostBackend.h"

#include "codegen/HostVectorMath.h"
#include "codegen/llvm/HostTargetMachine.h"
#include "codegen/llvm/KernelToLlvm.h"
#include "ir/kernel/Printer.h"

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

namespace kiln::codegen {

struct HostModule::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit; ///< owns the code and data of every kernel
  std::map<std::string, void *, std::less<>> entries;
};

HostModule::HostModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HostModule::~HostModule() = default;

void *HostModule::lookup(std::string_view kernelName) const {
  auto it = impl_->entries.find(kernelName);
  return it == impl_->entries.end() ? nullptr : it->second;
}

namespace {

std::string kernelNames(std::span<const kir::Kernel> kernels) {
  std::vector<std::string> names;
  for (const auto &kernel : kernels)
    names.push_back(fmt::format("'{}'", kernel.name));
  return fmt::format("{}", fmt::join(names, ", "));
}

/// Keeps LLVM's remarks and warnings (such as "loop not vectorized" for a
/// Vectorized loop that calls an fp8 helper) off the user's terminal, and
/// collects errors so they become a kiln::Error.
class DiagnosticCollector : public llvm::DiagnosticHandler {
public:
  explicit DiagnosticCollector(std::shared_ptr<std::vector<std::string>> errors)
      : errors_(std::move(errors)) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo &info) override {
    if (info.getSeverity() == llvm::DS_Error) {
      std::string text;
      llvm::raw_string_ostream stream(text);
      llvm::DiagnosticPrinterRawOStream printer(stream);
      info.print(printer);
      stream.flush();
      errors_->push_back(std::move(text));
    }
    return true;
  }

private:
  std::shared_ptr<std::vector<std::string>> errors_;
};

/// A fresh context whose diagnostics land in `errors`.
std::unique_ptr<llvm::LLVMContext>
createContext(const std::shared_ptr<std::vector<std::string>> &errors) {
  auto context = std::make_unique<llvm::LLVMContext>();
  context->setDiagnosticHandler(std::make_unique<DiagnosticCollector>(errors));
  return context;
}

Expected<void> checkDiagnostics(std::span<const kir::Kernel> kernels,
                                const std::vector<std::string> &errors) {
  if (errors.empty())
    return {};
  return makeError(ErrorCode::Unsupported,
                   fmt::format("host backend: LLVM failed on kernel(s) {}: {}",
                               kernelNames(kernels), fmt::join(errors, "; ")));
}

Error jitError(std::string_view what, std::string_view forWhom, llvm::Error error) {
  return Error(ErrorCode::Unsupported, fmt::format("host backend: {} for {}: {}", what, forWhom,
                                                   llvm::toString(std::move(error))));
}

/// A JIT for `target` with the runtime's entry points and the libm functions
/// kernels call bound by address (hostRuntimeSymbols): the generated code calls
/// into this very process, whatever its dynamic symbol table exports.
Expected<std::unique_ptr<llvm::orc::LLJIT>> createJit(const CpuTarget &target,
                                                      std::string_view forWhom) {
  host::initializeNativeTarget(); // a warm start may load code before anything compiled
  llvm::orc::JITTargetMachineBuilder machineBuilder{llvm::Triple(target.triple)};
  machineBuilder.setCPU(target.cpuName);
  llvm::SubtargetFeatures features(target.features);
  machineBuilder.addFeatures(features.getFeatures());
  machineBuilder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  machineBuilder.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Strict;
  auto jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machineBuilder)).create();
  if (!jit)
    return std::unexpected(jitError("cannot start the JIT", forWhom, jit.takeError()));

  llvm::orc::SymbolMap symbols;
  for (const host::RuntimeSymbol &symbol : host::hostRuntimeSymbols())
    symbols[(*jit)->mangleAndIntern(symbol.name)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(symbol.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  for (const VectorMathFunction &function : vectorMathFunctions())
    symbols[(*jit)->mangleAndIntern(function.vector)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(function.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  if (auto error = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return std::unexpected(jitError("cannot bind runtime symbols", forWhom, std::move(error)));
  return std::move(*jit);
}

} // namespace

Expected<std::string> emitHostLlvmIr(const kir::Kernel &kernel, const CpuTarget &target,
                                     bool optimized) {
  KILN_TRY(auto machine, host::createTargetMachine(target));
  auto errors = std::make_shared<std::vector<std::string>>();
  auto context = createContext(errors);
  std::span<const kir::Kernel> kernels(&kernel, 1);
  KILN_TRY(auto module, host::buildHostModule(kernels, target, *machine, *context));
  if (optimized)
    host::optimizeModule(*module, *machine, /*slpVectorize=*/true);
  KILN_TRY_VOID(checkDiagnostics(kernels, *errors));
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream, nullptr);
  stream.flush();
  return text;
}

namespace {

/// Kernels in one module, optimized at O3 for `machine`: what both the JIT and
/// the object emitter compile, so the two produce the same code.
struct OptimizedModule {
  std::shared_ptr<std::vector<std::string>> errors;
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
};

Expected<void> checkDistinctNames(std::span<const kir::Kernel> kernels) {
  std::set<std::string_view> names;
  for (const auto &kernel : kernels)
    if (!names.insert(kernel.name).second)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("host backend: two kernels are named '{}'", kernel.name));
  return {};
}

Expected<OptimizedModule> buildOptimizedModule(std::span<const kir::Kernel> kernels,
                                               const CpuTarget &target,
                                               llvm::TargetMachine &machine) {
  KILN_TRY_VOID(checkDistinctNames(kernels));
  OptimizedModule built;
  built.errors = std::make_shared<std::vector<std::string>>();
  built.context = createContext(built.errors);
  KILN_TRY(built.module, host::buildHostModule(kernels, target, machine, *built.context));
  host::optimizeModule(*built.module, machine, /*slpVectorize=*/true);
  KILN_TRY_VOID(checkDiagnostics(kernels, *built.errors));
  return built;
}

} // namespace

Expected<std::string> emitHostObject(std::span<const kir::Kernel> kernels,
                                     const CpuTarget &target) {
  KILN_TRY(auto machine, host::createTargetMachine(target));
  KILN_TRY(OptimizedModule built, buildOptimizedModule(kernels, target, *machine));
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::ObjectFile))
    return makeError(ErrorCode::Unsupported,
                     fmt::format("host backend: LLVM cannot emit an object file for {}",
                                 target.triple));
  passes.run(*built.module);
  KILN_TRY_VOID(checkDiagnostics(kernels, *built.errors));
  return std::string(buffer.data(), buffer.size());
}

namespace {

/// `kernels` split into at most `parts` groups of about the same work (by the size of their
/// kernel IR: what LLVM's time grows with), largest first onto the lightest group.
std::vector<std::vector<kir::Kernel>> shardKernels(std::span<const kir::Kernel> kernels,
                                                   size_t parts) {
  std::vector<std::pair<size_t, size_t>> bySize; // (printed size, index)
  for (size_t i = 0; i < kernels.size(); ++i)
    bySize.emplace_back(kir::printKernel(kernels[i]).size(), i);
  std::ranges::sort(bySize, std::greater<>());
  std::vector<std::vector<kir::Kernel>> shards(std::min(parts, kernels.size()));
  std::vector<size_t> load(shards.size(), 0);
  for (const auto &[size, index] : bySize) {
    size_t lightest = static_cast<size_t>(std::ranges::min_element(load) - load.begin());
    shards[lightest].push_back(kernels[index]);
    load[lightest] += size;
  }
  return shards;
}

} // namespace

Expected<std::vector<std::string>> emitHostObjects(std::span<const kir::Kernel> kernels,
                                                   const CpuTarget &target, int parts) {
  KILN_TRY_VOID(checkDistinctNames(kernels)); // before they part
  std::vector<std::vector<kir::Kernel>> shards =
      shardKernels(kernels, static_cast<size_t>(std::max(parts, 1)));
  if (shards.size() <= 1) {
    KILN_TRY(std::string object, emitHostObject(kernels, target));
    return std::vector<std::string>{std::move(object)};
  }
  host::initializeNativeTarget(); // once, before the threads
  std::vector<Expected<std::string>> objects(shards.size(), std::string());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 1; i < shards.size(); ++i)
      threads.emplace_back([&, i] { objects[i] = emitHostObject(shards[i], target); });
    objects[0] = emitHostObject(shards[0], target);
  } // the threads join here
  std::vector<std::string> out;
  for (Expected<std::string> &object : objects) {
    if (!object)
      return std::unexpected(std::move(object.error()));
    out.push_back(std::move(*object));
  }
  return out;
}

Expected<std::shared_ptr<HostModule>> loadHostObjects(std::span<const std::string> objects,
                                                      std::span<const std::string> names,
                                                      const CpuTarget &target) {
  std::string forWhom = names.size() == 1 ? fmt::format("kernel '{}'", names.front())
                                          : fmt::format("a module of {} kernels", names.size());
  KILN_TRY(auto jit, createJit(target, forWhom));
  for (const std::string &object : objects) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(object.data(), object.size()), "kiln-host-kernels.o");
    if (auto error = jit->addObjectFile(std::move(buffer)))
      return std::unexpected(jitError("cannot load the object code", forWhom, std::move(error)));
  }

  // Looking every kernel up now links the object here, so a failure is
  // reported by this call rather than at the first run.
  auto impl = std::make_unique<HostModule::Impl>();
  for (const std::string &name : names) {
    auto address = jit->lookup(name);
    if (!address)
      return std::unexpected(jitError("cannot link", fmt::format("kernel '{}'", name),
                                      address.takeError()));
    impl->entries.emplace(name, address->toPtr<void *>());
  }
  impl->jit = std::move(jit);
  return std::make_shared<HostModule>(std::move(impl));
}

Expected<std::shared_ptr<HostModule>> compileHostModule(std::span<const kir::Kernel> kernels,
                                                        const CpuTarget &target) {
  KILN_TRY(std::vector<std::string> objects, emitHostObjects(kernels, target, compileThreads()));
  std::vector<std::string> names;
  for (const kir::Kernel &kernel : kernels)
    names.push_back(kernel.name);
  return loadHostObjects(objects, names, target);
}

int compileThreads() {
  unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 8u));
}

} // namespace kiln::codegen
