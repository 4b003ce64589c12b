// Helpers for NVPTX codegen tests: compile kernels to PTX for one of the
// checked architectures, assemble it with ptxas (0 spills asserted, registers
// reported), or WARN and keep the PTX checks when ptxas is absent.
#pragma once

#include "codegen/Ptx.h"
#include "codegen/Ptxas.h"
#include "codegen/Target.h"
#include "ir/kernel/Builder.h"

#include <catch2/catch.hpp>

#include <string>
#include <unistd.h>
#include <vector>

namespace kiln::testing {

inline codegen::GpuTarget gpuTarget(std::string_view arch) {
  auto target = codegen::gpuTargetNamed(arch);
  REQUIRE(target);
  return *target;
}

inline bool ptxasAvailable() { return access(codegen::ptxasPath().c_str(), X_OK) == 0; }

/// Compiles `kernels` to PTX for `arch` (failing the test on an error), runs
/// ptxas on it when present and checks every kernel assembled without spills.
inline std::string compileAndAssemble(const std::vector<kir::Kernel> &kernels,
                                      std::string_view arch) {
  codegen::GpuTarget target = gpuTarget(arch);
  auto ptx = codegen::compilePtxWithLlvm(kernels, target);
  if (!ptx)
    FAIL("compilePtxWithLlvm(" << arch << ") failed: " << ptx.error().str());
  CHECK(ptx->find(".target " + target.archName()) != std::string::npos);
  for (const kir::Kernel &kernel : kernels)
    CHECK(ptx->find(".entry " + kernel.name) != std::string::npos);
  if (!ptxasAvailable()) {
    WARN("ptxas not found at " << codegen::ptxasPath() << ": PTX for " << arch
                               << " checked as text only");
    return *ptx;
  }
  auto assembled = codegen::runPtxas(*ptx, target);
  if (!assembled)
    FAIL("ptxas rejected the PTX for " << arch << ": " << assembled.error().str() << "\nPTX:\n"
                                       << *ptx);
  CHECK(!assembled->cubin.empty());
  REQUIRE(assembled->kernels.size() == kernels.size());
  for (const codegen::KernelResources &resources : assembled->kernels) {
    INFO(arch << " " << resources.name << ": " << resources.registers << " registers, "
              << resources.sharedBytes << " bytes smem, " << resources.stackBytes
              << " bytes stack, spills " << resources.spillStoreBytes << "/"
              << resources.spillLoadBytes);
    CHECK(resources.registers > 0);
    CHECK(resources.spillStoreBytes == 0);
    CHECK(resources.spillLoadBytes == 0);
  }
  return *ptx;
}

/// Whether `ptx` contains `text`; on a miss the PTX is printed.
inline bool ptxHas(const std::string &ptx, const std::string &text) {
  bool found = ptx.find(text) != std::string::npos;
  if (!found)
    UNSCOPED_INFO("PTX lacks '" << text << "':\n" << ptx);
  return found;
}

} // namespace kiln::testing
