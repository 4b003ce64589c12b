// Helpers for host backend tests: 64-byte aligned buffers (what the executor
// guarantees), compiling one kernel and calling it on raw buffers.
#pragma once

#include "codegen/Target.h"
#include "codegen/llvm/HostBackend.h"
#include "ir/kernel/Builder.h"
#include "support/AlignedAllocator.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace kiln::testing {

template <typename T> using AlignedVector = std::vector<T, AlignedAllocator<T>>;

/// The host target, computed once.
inline const codegen::CpuTarget &hostTarget() {
  static const codegen::CpuTarget target = codegen::hostCpuTarget();
  return target;
}

/// Compiles `kernels` for the host; a failure fails the test with the error text.
inline std::shared_ptr<codegen::HostModule> compileKernels(std::vector<kir::Kernel> kernels) {
  auto module = codegen::compileHostModule(kernels, hostTarget());
  if (!module)
    FAIL("compileHostModule failed: " << module.error().str());
  return *module;
}

/// Compiles one kernel and returns a callable that keeps its module alive.
class JitKernel {
public:
  explicit JitKernel(kir::Kernel kernel) : name_(kernel.name) {
    module_ = compileKernels({std::move(kernel)});
    fn_ = module_->lookupKernel(name_);
    REQUIRE(fn_ != nullptr);
  }
  /// Calls the kernel with these base pointers (params in order).
  void operator()(std::vector<void *> args) const { fn_(args.data()); }

private:
  std::string name_;
  std::shared_ptr<codegen::HostModule> module_;
  codegen::HostKernelFn fn_ = nullptr;
};

inline uint32_t bitsOf(float value) { return std::bit_cast<uint32_t>(value); }
inline uint64_t bitsOf(double value) { return std::bit_cast<uint64_t>(value); }

/// Float equality that treats NaN == NaN (with the same sign) and tells +0 from -0.
inline bool sameFloat(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

} // namespace kiln::testing
