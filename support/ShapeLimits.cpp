// The tensor size rule of ShapeLimits.h.
#include "support/ShapeLimits.h"

namespace kiln {

std::optional<int64_t> checkedNumElements(std::span<const int64_t> shape) {
  int64_t nonZeroProduct = 1;
  bool zero = false;
  for (int64_t size : shape) {
    if (size < 0)
      return std::nullopt;
    if (size == 0) {
      zero = true;
      continue;
    }
    if (__builtin_mul_overflow(nonZeroProduct, size, &nonZeroProduct) ||
        nonZeroProduct > kMaxElements)
      return std::nullopt;
  }
  return zero ? 0 : nonZeroProduct;
}

} // namespace kiln
