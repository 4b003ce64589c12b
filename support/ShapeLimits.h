// The one size rule every tensor obeys (graph values and host tensors alike):
// at most kMaxElements elements, checked without overflowing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace kiln {

/// The most elements a tensor may have: 2^53, so element counts and flat
/// indices stay exact in fp64 and far from int64 overflow. The bound applies to
/// the product of the non-zero dimensions, because strides multiply the other
/// dimensions even when one of them is zero.
inline constexpr int64_t kMaxElements = int64_t{1} << 53;

/// The element count of `shape`, or nullopt when a dimension is negative or
/// the product of its non-zero dimensions exceeds kMaxElements.
std::optional<int64_t> checkedNumElements(std::span<const int64_t> shape);

} // namespace kiln
