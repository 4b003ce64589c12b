// The simulator behind a launch-plan step.
#include "runtime/sim/SimInvoker.h"

#include <span>
#include <vector>

namespace kiln::sim {

namespace {

class SimInvoker final : public runtime::KernelInvoker {
public:
  SimInvoker(kir::Kernel kernel, SimOptions options)
      : kernel_(std::move(kernel)), options_(options) {}

  Expected<void> invoke(void *const *args) const override {
    std::vector<std::span<std::byte>> buffers;
    buffers.reserve(kernel_.params.size());
    for (size_t i = 0; i < kernel_.params.size(); ++i) {
      const kir::Buffer &param = *kernel_.params[i];
      auto bytes = static_cast<size_t>(param.size) * static_cast<size_t>(dtypeByteSize(param.dtype));
      buffers.emplace_back(static_cast<std::byte *>(args[i]), bytes);
    }
    KILN_TRY(SimStats stats, simulateKernel(kernel_, buffers, options_));
    (void)stats;
    return {};
  }

private:
  kir::Kernel kernel_;
  SimOptions options_;
};

} // namespace

std::shared_ptr<const runtime::KernelInvoker> makeSimInvoker(kir::Kernel kernel,
                                                             SimOptions options) {
  return std::make_shared<SimInvoker>(std::move(kernel), options);
}

} // namespace kiln::sim
