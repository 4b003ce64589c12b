// compilePtxWithLlvm: GPU kernels -> an NVPTX module -> libdevice linked and
// internalized -> O3 (with NVVMReflect, FTZ off) -> PTX text.
#include "codegen/Ptx.h"
#include "codegen/llvm/HostTargetMachine.h"
#include "codegen/llvm/NvptxEmitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

namespace kiln::codegen {
namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

std::string kernelNames(std::span<const kir::Kernel> kernels) {
  std::string names;
  for (const kir::Kernel &kernel : kernels)
    names += (names.empty() ? "" : ", ") + kernel.name;
  return names;
}

void initializeNvptxTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

/// libdevice.10.bc: $KILN_LIBDEVICE, else under $CUDA_HOME, else under /usr/local/cuda.
std::string libdevicePath() {
  if (const char *explicitPath = std::getenv("KILN_LIBDEVICE"); explicitPath && *explicitPath)
    return explicitPath;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    return (std::filesystem::path(cudaHome) / "nvvm/libdevice/libdevice.10.bc").string();
  return "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
}

/// Links the libdevice functions `module` calls, makes everything but the
/// kernels internal and drops what no kernel reaches.
Expected<void> linkLibdevice(llvm::Module &module, const std::set<std::string> &kernels) {
  bool needed = false;
  for (const llvm::Function &function : module)
    needed = needed || (function.isDeclaration() && function.getName().starts_with("__nv_"));
  if (needed) {
    std::string path = libdevicePath();
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("NVPTX backend: libdevice not found at '{}' (looked at "
                                   "$KILN_LIBDEVICE, then $CUDA_HOME/nvvm/libdevice/"
                                   "libdevice.10.bc, then /usr/local/cuda/nvvm/libdevice/"
                                   "libdevice.10.bc): {}",
                                   path, buffer.getError().message()));
    auto library = llvm::parseBitcodeFile(**buffer, module.getContext());
    if (!library)
      return makeError(ErrorCode::FormatError,
                       fmt::format("NVPTX backend: cannot read libdevice '{}': {}", path,
                                   llvm::toString(library.takeError())));
    (*library)->setTargetTriple(module.getTargetTriple());
    (*library)->setDataLayout(module.getDataLayout());
    if (llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::LinkOnlyNeeded))
      return makeError(ErrorCode::CompileError,
                       fmt::format("NVPTX backend: linking libdevice '{}' failed", path));
  }
  // __CUDA_FTZ = 0 for NVVMReflect: libdevice keeps subnormals, as the graph does.
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  // Every helper is inlined into the kernels: with many kernels in one module
  // the inliner would keep a helper many kernels call as a function, and a
  // call costs an ABI frame that ptxas spills registers around.
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !kernels.contains(function.getName().str())) {
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
      function.removeFnAttr(llvm::Attribute::NoInline);
      function.addFnAttr(llvm::Attribute::AlwaysInline);
    }
  for (llvm::GlobalVariable &global : module.globals())
    if (!global.isDeclaration())
      global.setLinkage(llvm::GlobalValue::InternalLinkage);
  // Drop the internal functions nothing calls, to a fixed point (libdevice
  // functions call each other), before O3 spends time on them.
  for (bool erased = true; erased;) {
    erased = false;
    for (llvm::Function &function : llvm::make_early_inc_range(module))
      if (function.hasInternalLinkage() && function.use_empty()) {
        function.eraseFromParent();
        erased = true;
      }
  }
  return {};
}

} // namespace

Expected<std::string> compilePtxWithLlvm(std::span<const kir::Kernel> kernels,
                                         const GpuTarget &target, std::string *llvmIr) {
  initializeNvptxTarget();
  std::string lookupError;
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(kTriple, lookupError);
  if (!nvptx)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("NVPTX backend: LLVM has no NVPTX target: {}", lookupError));
  // The target's PTX version, raised where a kernel needs newer instructions.
  int ptxVersion = target.ptxVersion;
  for (const kir::Kernel &kernel : kernels)
    ptxVersion = std::max(ptxVersion, nvptx::requiredPtxVersion(kernel));
  llvm::TargetOptions options;
  // a*b+c stays two roundings unless the kernel asks for Fma.
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> machine(nvptx->createTargetMachine(
      kTriple, target.archName(), fmt::format("+ptx{}", ptxVersion), options, std::nullopt,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("NVPTX backend: no target machine for {}", target.archName()));

  llvm::LLVMContext context;
  // LLVM reports codegen problems through the context; collect them instead
  // of letting the default handler exit the process.
  std::vector<std::string> problems;
  context.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *info, void *sink) {
        if (info->getSeverity() != llvm::DS_Error)
          return;
        std::string text;
        llvm::raw_string_ostream stream(text);
        llvm::DiagnosticPrinterRawOStream printer(stream);
        info->print(printer);
        static_cast<std::vector<std::string> *>(sink)->push_back(stream.str());
      },
      &problems);
  std::string moduleName = kernels.size() == 1 ? kernels.front().name : "kiln_nvptx_module";
  auto module = std::make_unique<llvm::Module>(moduleName, context);
  module->setTargetTriple(kTriple);
  module->setDataLayout(machine->createDataLayout());

  nvptx::NvptxEmitter emitter(*module, target);
  std::set<std::string> kernelSet;
  for (const kir::Kernel &kernel : kernels) {
    KILN_TRY_VOID(emitter.emitKernel(kernel));
    kernelSet.insert(kernel.name);
  }
  std::string invalid;
  llvm::raw_string_ostream invalidStream(invalid);
  if (llvm::verifyModule(*module, &invalidStream))
    return makeError(ErrorCode::VerifyError,
                     fmt::format("NVPTX backend: LLVM IR for kernel(s) {} does not verify: {}",
                                 kernelNames(kernels), invalidStream.str()));
  KILN_TRY_VOID(linkLibdevice(*module, kernelSet));
  // The NVPTX target adds NVVMReflect and its own passes to the default pipeline.
  host::optimizeModule(*module, *machine, /*slpVectorize=*/false);
  if (llvmIr) {
    llvmIr->clear();
    llvm::raw_string_ostream irStream(*llvmIr);
    module->print(irStream, nullptr);
  }

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptxStream(ptx);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, ptxStream, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
    return makeError(ErrorCode::Unsupported, "NVPTX backend: LLVM cannot emit PTX");
  codegen.run(*module);
  if (!problems.empty())
    return makeError(ErrorCode::CompileError,
                     fmt::format("NVPTX backend: LLVM failed on kernel(s) {}: {}",
                                 kernelNames(kernels), fmt::format("{}", fmt::join(problems, "; "))));
  return std::string(ptx.str());
}

} // namespace kiln::codegen
