// Output tensors recycled from an earlier run (RunOptions::recycledOutputs).
#include "runtime/RunOptions.h"

namespace kiln {

HostTensor takeOutputTensor(const RunOptions &options, std::string_view name, DType dtype,
                            const std::vector<int64_t> &shape) {
  if (options.recycledOutputs) {
    auto found = options.recycledOutputs->find(name);
    if (found != options.recycledOutputs->end() && found->second.dtype() == dtype &&
        found->second.shape() == shape) {
      HostTensor tensor = std::move(found->second);
      options.recycledOutputs->erase(found);
      return tensor;
    }
  }
  return HostTensor::uninitialized(dtype, shape);
}

} // namespace kiln
