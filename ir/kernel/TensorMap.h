// Bulk tensor copies (TmaLoad) and their tensor maps: which maps a kernel takes, what makes a
// map or a copy malformed, and where each element of a box lands in shared memory. The
// simulator, both backends and the launchers read these rules from here.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::kir {

/// The largest tensor map rank and box extent the hardware takes.
inline constexpr int kTensorMapMaxRank = 5;
inline constexpr int64_t kTensorMapMaxBox = 256;

/// The tensor maps of `kernel`'s TmaLoads, each once, in the order they first appear in its
/// body: the trailing by-value parameters of its calling convention.
std::vector<TensorMapPtr> tensorMapsOf(const Kernel &kernel);

/// Elements and bytes of one box of `map`.
int64_t tmaBoxElements(const TensorMap &map);
int64_t tmaBoxBytes(const TensorMap &map);

/// What makes `map` malformed (nullopt: nothing): a rank outside 1..5, an empty dimension, a
/// stride that is not a multiple of 16 bytes or overlaps the dimensions below it, a box extent
/// outside 1..256 (a box may hang over the tensor's edge), an innermost box row that is not a
/// multiple of 16 bytes (exactly 128 with the 128-byte swizzle), a tensor that is not a
/// global buffer or that the map's last element falls outside.
std::optional<std::string> tensorMapProblem(const TensorMap &map);

/// What makes a copy malformed: its map's problems, coordinates of the wrong rank, a
/// destination that is not a shared buffer of the map's dtype, barriers not a shared i64.
/// Its operands are present and typed as TargetInstrs.def says (the node check's, and the
/// parser's, part).
std::optional<std::string> tmaLoadProblem(const TmaLoad &copy);

/// The byte a box element lands at, from the destination's first byte (which sits at a
/// 1024-byte boundary with the swizzle, 128 without): `linear` counts the box's elements
/// innermost dimension first.
int64_t tmaBoxByte(const TensorMap &map, int64_t linear);

/// The alignment (bytes) of the shared destination a copy through `map` needs.
int64_t tmaDestinationAlignment(const TensorMap &map);

std::string_view tmaSwizzleName(TmaSwizzle swizzle);

} // namespace kiln::kir
