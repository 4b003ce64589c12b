#include "runtime/TensorMapRules.h"

#include <fmt/format.h>

namespace kiln::runtime {

std::optional<std::string> tensorMapArgProblem(const TensorMapArg &map) {
  const size_t rank = map.dims.size();
  if (rank < 1 || rank > 5 || map.box.size() != rank || map.strides.size() + 1 != rank)
    return "is malformed (a rank of 1 to 5 with a box entry per dim and a stride per dim but "
           "the first)";
  const int64_t bytes = dtypeByteSize(map.dtype);
  constexpr int64_t kMaxDim = int64_t{1} << 32, kMaxStrideBytes = int64_t{1} << 40;
  for (size_t d = 0; d < rank; ++d) {
    if (map.dims[d] < 1 || map.dims[d] > kMaxDim)
      return fmt::format("has dim {} of {} elements (1 to 2^32)", d, map.dims[d]);
    if (map.box[d] < 1 || map.box[d] > 256)
      return fmt::format("has a box of {} along dim {} (1 to 256)", map.box[d], d);
  }
  for (size_t d = 1; d < rank; ++d) {
    const int64_t stride = map.strides[d - 1];
    if (stride < 1 || stride >= kMaxStrideBytes / bytes || stride * bytes % 16 != 0)
      return fmt::format("steps dim {} by {} elements of {} bytes (a positive multiple of 16 "
                         "bytes below 2^40)",
                         d, stride, bytes);
  }
  const int64_t innerBytes = map.box[0] * bytes;
  if (innerBytes % 16 != 0)
    return fmt::format("has an inner box of {} bytes (a multiple of 16)", innerBytes);
  if (map.swizzle128 && innerBytes > 128)
    return fmt::format("has an inner box of {} bytes, past the 128-byte swizzle's span",
                       innerBytes);
  return std::nullopt;
}

} // namespace kiln::runtime
