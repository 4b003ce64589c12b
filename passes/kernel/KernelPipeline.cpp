// The default kernel pipeline that runs on every lowered kernel, and the switch that makes it
// verify its input and each pass's output.
#include "passes/kernel/Passes.h"

#include "ir/kernel/Printer.h"
#include "ir/kernel/Verifier.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace kiln::kir {

namespace {

bool verifyByDefault() {
  if (const char *env = std::getenv("KILN_VERIFY_KERNEL_IR")) {
    std::string_view value(env);
    if (value == "1")
      return true;
    if (value == "0")
      return false;
  }
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

std::atomic<bool> &verifySwitch() {
  static std::atomic<bool> on{verifyByDefault()};
  return on;
}

std::atomic<uint64_t> verifications{0};

/// `kernel` came out of `stage`; the lowering and the passes only make well-formed kernels.
void verifyAfter(const Kernel &kernel, std::string_view stage, bool verify) {
  if (!verify)
    return;
  verifications.fetch_add(1, std::memory_order_relaxed);
  Expected<void> verified = verifyKernel(kernel);
  KILN_CHECK(verified.has_value(),
             fmt::format("kernel IR verifier, {}: {}\n{}", stage,
                         verified ? std::string() : verified.error().message(),
                         printKernel(kernel)));
}

} // namespace

bool verifyKernelPassesEnabled() { return verifySwitch().load(std::memory_order_relaxed); }

void setVerifyKernelPasses(bool on) { verifySwitch().store(on, std::memory_order_relaxed); }

uint64_t kernelPassVerifications() { return verifications.load(std::memory_order_relaxed); }

Kernel runKernelPasses(Kernel kernel, bool verify) {
  verifyAfter(kernel, "input of the kernel passes (the lowering's output)", verify);
  kernel = simplifyKernel(std::move(kernel));
  verifyAfter(kernel, "after simplify", verify);
  kernel = hoistLoopInvariants(std::move(kernel));
  verifyAfter(kernel, "after hoist", verify);
  kernel = simplifyKernel(std::move(kernel));
  verifyAfter(kernel, "after the second simplify", verify);
  return kernel;
}

Kernel runKernelPasses(Kernel kernel) {
  return runKernelPasses(std::move(kernel), verifyKernelPassesEnabled());
}

} // namespace kiln::kir
