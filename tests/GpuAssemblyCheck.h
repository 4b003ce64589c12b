// A check every test that makes GPU kernels runs: the kernels compile to PTX
// through both GPU backends (LLVM NVPTX and CUDA C through NVRTC), ptxas
// assembles each module for the target, and no kernel spills registers.
//
// A spill is expected only from a schedule a test picked from the search space
// rather than the default: the space lists candidates, and the autotuner drops
// those ptxas reports spilling. Such spills are counted and reported with WARN;
// a spill from a default schedule fails.
#pragma once

#include "codegen/Ptx.h"
#include "codegen/Ptxas.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"
#include "ir/kernel/IRUtils.h"
#include "NvrtcOnThread.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln::test {

/// The resources ptxas reported for one kernel from one backend.
struct AssembledKernel {
  std::string backend; ///< "llvm" or "nvrtc"
  codegen::KernelResources resources;
};

/// Compiles `kernels` for `target` with both backends, assembles each PTX with
/// ptxas and FAIL_CHECKs any error or spill, naming `context`. A missing tool
/// (ptxas, NVRTC) is a WARN, once per process, and skips only what needs it.
/// Returns every kernel's resources.
/// How a kernel's spills are judged.
enum class SpillPolicy {
  Fail,      ///< a default schedule: any spill fails
  Candidate, ///< a schedule from the search space: spills are reported, not failed
};

/// `describe`, when given, names where a kernel came from (by kernel name);
/// `policyOf` says how its spills are judged (default: they fail).
inline std::vector<AssembledKernel>
checkGpuKernelsAssemble(const std::vector<kir::Kernel> &kernels, const codegen::GpuTarget &target,
                        const std::string &context,
                        const std::function<std::string(const std::string &)> &describe = {},
                        const std::function<SpillPolicy(const std::string &)> &policyOf = {}) {
  static bool warnedPtxas = false, warnedNvrtc = false;
  std::vector<AssembledKernel> assembled;
  if (kernels.empty())
    return assembled;
  auto assemble = [&](const std::string &backend, const std::string &ptx) {
    auto result = codegen::runPtxas(ptx, target);
    if (!result && result.error().code() == ErrorCode::Unavailable) {
      if (!warnedPtxas)
        WARN("ptxas is unavailable, GPU kernels are not assembled: " << result.error().message());
      warnedPtxas = true;
      return;
    }
    if (!result) {
      FAIL_CHECK(context << ": ptxas rejected the " << backend << " PTX for "
                         << target.archName() << ": " << result.error().str());
      return;
    }
    int candidateSpills = 0;
    for (const codegen::KernelResources &kernel : result->kernels) {
      bool spills = kernel.spillStoreBytes != 0 || kernel.spillLoadBytes != 0;
      if (spills && policyOf && policyOf(kernel.name) == SpillPolicy::Candidate) {
        ++candidateSpills;
        spills = false;
      }
      if (spills)
        FAIL_CHECK(context << ": kernel " << kernel.name
                           << (describe ? " from " + describe(kernel.name) : std::string())
                           << " (" << backend << ", " << target.archName()
                           << ") spills: " << kernel.spillStoreBytes
                           << " bytes stored, " << kernel.spillLoadBytes << " loaded, "
                           << kernel.registers << " registers");
      assembled.push_back({backend, kernel});
    }
    if (candidateSpills > 0)
      WARN(context << ": " << candidateSpills << " kernels of non-default schedules spill ("
                   << backend << ", " << target.archName()
                   << "); the autotuner rejects such candidates");
  };

  auto llvmPtx = codegen::compilePtxWithLlvm(kernels, target);
  if (llvmPtx)
    assemble("llvm", *llvmPtx);
  else
    FAIL_CHECK(context << ": LLVM NVPTX failed for " << target.archName() << ": "
                       << llvmPtx.error().str());

  auto source = codegen::cuda::emitCudaSource(kernels, target);
  if (!source) {
    FAIL_CHECK(context << ": CUDA C emission failed: " << source.error().str());
    return assembled;
  }
  Expected<codegen::cuda::NvrtcOutput> nvrtc =
      compilePtxWithNvrtcOnThread(*source, "kiln_test.cu", target);
  if (!nvrtc && nvrtc.error().code() == ErrorCode::Unavailable) {
    if (!warnedNvrtc)
      WARN("NVRTC is unavailable, the CUDA C backend is not compiled: " << nvrtc.error().message());
    warnedNvrtc = true;
  } else if (!nvrtc) {
    FAIL_CHECK(context << ": NVRTC rejected the CUDA C for " << target.archName() << ": "
                       << nvrtc.error().str());
  } else {
    assemble("nvrtc", nvrtc->ptx);
  }
  return assembled;
}

/// The kernels whose tensor-core statements `target` has (an e4m3 product needs sm_89).
inline std::vector<kir::Kernel> kernelsFor(const std::vector<kir::Kernel> &kernels,
                                           const codegen::GpuTarget &target) {
  std::vector<kir::Kernel> runnable;
  for (const kir::Kernel &kernel : kernels)
    if (kir::minimumSm(kernel.body) <= target.sm)
      runnable.push_back(kernel);
  return runnable;
}

/// Collects the GPU kernels a test case makes and checks them with
/// checkGpuKernelsAssemble for every checked architecture (sm_80, sm_90a) when
/// it goes out of scope, in one module per backend and architecture: a test case that lowers hundreds of small graphs pays for a few
/// compiles instead of hundreds. Declare one at the top of such a test case;
/// while it lives, assembleOrBatch() adds to it. Kernels are renamed
/// "a<n>_<name>" so names stay unique in the module; a failure names the
/// kernel and where it came from.
class AssemblyBatch {
public:
  AssemblyBatch() : outer_(current()), exceptions_(std::uncaught_exceptions()) {
    current() = this;
  }
  AssemblyBatch(const AssemblyBatch &) = delete;
  AssemblyBatch &operator=(const AssemblyBatch &) = delete;
  ~AssemblyBatch() {
    current() = outer_;
    // A test case that is already failing (a REQUIRE threw) reports that instead.
    if (std::uncaught_exceptions() == exceptions_)
      flush();
  }

  void add(const std::vector<kir::Kernel> &kernels, const std::string &context,
           SpillPolicy policy) {
    for (kir::Kernel kernel : kernels) {
      kernel.name = fmt::format("a{}_{}", kernels_.size(), kernel.name);
      contexts_.push_back(fmt::format("{} ({})", context, kernel.name));
      policies_[kernel.name] = policy;
      kernels_.push_back(std::move(kernel));
    }
  }

  /// The innermost live batch, or nullptr.
  static AssemblyBatch *&current() {
    static AssemblyBatch *batch = nullptr;
    return batch;
  }

private:
  void flush() {
    if (kernels_.empty())
      return;
    std::string context = fmt::format("{} kernels of this test case, from: {}", kernels_.size(),
                                      contexts_.front());
    if (contexts_.size() > 1)
      context += fmt::format(" ... {}", contexts_.back());
    std::map<std::string, std::string> origin;
    for (size_t i = 0; i < kernels_.size(); ++i)
      origin[kernels_[i].name] = contexts_[i];
    for (std::string_view arch : codegen::kCheckedGpuArchs) {
      auto target = codegen::gpuTargetNamed(arch);
      REQUIRE(target.has_value());
      std::vector<kir::Kernel> runnable = kernelsFor(kernels_, *target);
      if (runnable.empty())
        continue;
      checkGpuKernelsAssemble(
          runnable, *target, context,
          [&](const std::string &name) {
            auto it = origin.find(name);
            return it == origin.end() ? std::string("?") : it->second;
          },
          [&](const std::string &name) {
            auto it = policies_.find(name);
            return it == policies_.end() ? SpillPolicy::Fail : it->second;
          });
    }
  }

  AssemblyBatch *outer_;
  int exceptions_;
  std::vector<kir::Kernel> kernels_;
  std::vector<std::string> contexts_;
  std::map<std::string, SpillPolicy> policies_;
};

/// Checks `kernels` now for every checked architecture, or adds them to the
/// current AssemblyBatch when a test case declared one.
inline void assembleOrBatch(const std::vector<kir::Kernel> &kernels, const std::string &context,
                            SpillPolicy policy = SpillPolicy::Fail) {
  if (AssemblyBatch *batch = AssemblyBatch::current()) {
    batch->add(kernels, context, policy);
    return;
  }
  for (std::string_view arch : codegen::kCheckedGpuArchs) {
    auto target = codegen::gpuTargetNamed(arch);
    REQUIRE(target.has_value());
    std::vector<kir::Kernel> runnable = kernelsFor(kernels, *target);
    if (!runnable.empty())
      checkGpuKernelsAssemble(runnable, *target, context, {},
                              [policy](const std::string &) { return policy; });
  }
}

} // namespace kiln::test
