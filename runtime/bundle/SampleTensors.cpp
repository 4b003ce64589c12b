// Seeded sample tensors and output summaries for running bundles.
#include "runtime/bundle/SampleTensors.h"

#include "runtime/RunSizeBinder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::runtime::bundle {

NamedTensors sampleTensors(const LaunchPlan &plan, const std::vector<PlanBinding> &bindings,
                           uint64_t seed, bool zeros, const std::set<std::string> &skip,
                           std::span<const int64_t> sizes) {
  Rng rng(seed);
  NamedTensors tensors;
  for (const PlanBinding &binding : bindings) {
    if (skip.contains(binding.name))
      continue;
    const PlanBuffer &buffer = plan.buffers[static_cast<size_t>(binding.buffer)];
    HostTensor tensor(buffer.dtype,
                      sizes.empty() ? buffer.shape : shapeAtSizes(plan, buffer, sizes));
    if (!zeros)
      for (int64_t i = 0; i < tensor.numElements(); ++i) {
        double value = isFloatingPoint(buffer.dtype) ? rng.normal()
                       : buffer.dtype == DType::Bool ? static_cast<double>(rng.nextU64() % 2)
                                                     : static_cast<double>(rng.nextU64() % 10);
        tensor.setDouble(i, value);
      }
    tensors.emplace(binding.name, std::move(tensor));
  }
  return tensors;
}

std::string summarizeTensor(const std::string &name, const HostTensor &tensor) {
  std::vector<std::string> first;
  double low = INFINITY, high = -INFINITY, sum = 0;
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    double value = tensor.getDouble(i);
    if (i < 6)
      first.push_back(fmt::format("{:.6g}", value));
    low = std::min(low, value);
    high = std::max(high, value);
    sum += value;
  }
  if (tensor.numElements() > 6)
    first.push_back("...");
  double mean = tensor.numElements() > 0 ? sum / static_cast<double>(tensor.numElements()) : 0;
  return fmt::format("{}: {} = {} (min {:.6g}, max {:.6g}, mean {:.6g})", name, tensor.typeStr(),
                     fmt::join(first, " "), low, high, mean);
}

} // namespace kiln::runtime::bundle
