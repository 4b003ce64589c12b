#include "ir/kernel/TensorMap.h"

#include "ir/kernel/Visitor.h"
#include "ir/kernel/WgmmaLayout.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <unordered_set>

namespace kiln::kir {

std::vector<TensorMapPtr> tensorMapsOf(const Kernel &kernel) {
  struct Finder : StmtVisitor {
    std::vector<TensorMapPtr> maps;
    std::unordered_set<const TensorMap *> seen;
    void visitTargetInstr(const TargetInstr &node) override {
      if (node.op != TargetOp::TmaLoad)
        return;
      TensorMapPtr map = node.view<TmaLoad>().map;
      if (seen.insert(map.get()).second)
        maps.push_back(map);
    }
  } finder;
  finder.visit(kernel.body);
  return std::move(finder.maps);
}

int64_t tmaBoxElements(const TensorMap &map) {
  int64_t elements = 1;
  for (int64_t extent : map.box)
    elements *= extent;
  return elements;
}

int64_t tmaBoxBytes(const TensorMap &map) {
  return tmaBoxElements(map) * dtypeByteSize(map.global->dtype);
}

std::optional<std::string> tensorMapProblem(const TensorMap &map) {
  const std::string what = fmt::format("tensor map {}", map.name);
  if (!map.global || map.global->scope != MemScope::Global)
    return what + ": its tensor is not a global buffer";
  const int rank = static_cast<int>(map.dims.size());
  if (rank < 1 || rank > kTensorMapMaxRank)
    return fmt::format("{}: rank {} (1 to {})", what, rank, kTensorMapMaxRank);
  if (map.box.size() != map.dims.size() || map.strides.size() + 1 != map.dims.size())
    return fmt::format("{}: {} dimensions, {} box extents, {} strides (want {}, {}, {})", what,
                       rank, map.box.size(), map.strides.size(), rank, rank, rank - 1);
  const int64_t bytes = dtypeByteSize(map.global->dtype);
  int64_t span = 1; // elements the dimensions so far cover
  for (int d = 0; d < rank; ++d) {
    if (map.dims[d] < 1)
      return fmt::format("{}: dimension {} has {} elements", what, d, map.dims[d]);
    if (map.box[d] < 1 || map.box[d] > kTensorMapMaxBox)
      return fmt::format("{}: box extent {} along dimension {} (1 to {})", what, map.box[d], d,
                         kTensorMapMaxBox);
    if (d > 0) {
      int64_t stride = map.strides[d - 1];
      if (stride * bytes % 16 != 0 || stride < span)
        return fmt::format("{}: dimension {} steps {} elements ({} bytes): not a multiple of 16 "
                           "bytes at least the {} elements below it",
                           what, d, stride, stride * bytes, span);
      span = stride;
    }
    span = d == 0 ? map.dims[0] : span * map.dims[d];
  }
  int64_t last = map.dims[0] - 1; // the element the map's last element is
  for (int d = 1; d < rank; ++d)
    last += (map.dims[d] - 1) * map.strides[d - 1];
  if (last >= map.global->size)
    return fmt::format("{}: spans more than the {} elements of {}", what, map.global->size,
                       map.global->name);
  const int64_t rowBytes = map.box[0] * bytes;
  if (map.swizzle == TmaSwizzle::Bytes128 && rowBytes != kWgmmaRowBytes)
    return fmt::format("{}: a box row of {} bytes; the 128-byte swizzle takes rows of exactly "
                       "128",
                       what, rowBytes);
  if (rowBytes % 16 != 0)
    return fmt::format("{}: a box row of {} bytes, not a multiple of 16", what, rowBytes);
  return std::nullopt;
}

std::optional<std::string> tmaLoadProblem(const TmaLoad &copy) {
  const TensorMap &map = *copy.map;
  if (std::optional<std::string> problem = tensorMapProblem(map))
    return problem;
  if (copy.coords.size() != map.dims.size())
    return fmt::format("a bulk tensor copy through {} gives {} coordinates for its {} "
                       "dimensions",
                       map.name, copy.coords.size(), map.dims.size());
  const Buffer &destination = *copy.destination, &barriers = *copy.barriers;
  if (destination.scope != MemScope::Shared || destination.dtype != map.global->dtype)
    return fmt::format("a bulk tensor copy through {} lands in {}, not a shared {} buffer",
                       map.name, destination.name, dtypeName(map.global->dtype));
  if (barriers.scope != MemScope::Shared || barriers.dtype != DType::I64)
    return fmt::format("a bulk tensor copy through {} completes on {}, not a shared i64 "
                       "buffer of mbarriers",
                       map.name, barriers.name);
  return std::nullopt;
}

int64_t tmaBoxByte(const TensorMap &map, int64_t linear) {
  const int64_t byte = linear * dtypeByteSize(map.global->dtype);
  if (map.swizzle == TmaSwizzle::Bytes128)
    return swizzle128(static_cast<uint32_t>(byte));
  return byte;
}

int64_t tmaDestinationAlignment(const TensorMap &map) {
  return map.swizzle == TmaSwizzle::Bytes128 ? kWgmmaAtomBytes : 128;
}

std::string_view tmaSwizzleName(TmaSwizzle swizzle) {
  switch (swizzle) {
  case TmaSwizzle::None: return "none";
  case TmaSwizzle::Bytes128: return "128B";
  }
  KILN_UNREACHABLE("tma swizzle");
}

} // namespace kiln::kir
