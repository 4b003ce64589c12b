// Pieces of hand-written launch plans over kN-element f32 buffers, shared by
// the runtime tests that build plans without the compiler.
#pragma once

#include "runtime/LaunchPlan.h"
#include "support/HostTensor.h"

#include <string>

namespace kiln::test {

constexpr int64_t kN = 5;

/// A kN-element f32 plan buffer; `offset` places an arena buffer.
inline runtime::PlanBuffer f32Buffer(std::string name, runtime::Storage storage, int binding = -1,
                                     int64_t offset = 0) {
  runtime::PlanBuffer buffer{std::move(name), DType::F32, {kN}, kN * 4, storage};
  buffer.binding = binding;
  buffer.arenaOffset = offset;
  return buffer;
}

/// x = [0.5, 1.5, ...]: kN values, none of them zero.
inline HostTensor smallInput() {
  HostTensor x(DType::F32, {kN});
  for (int64_t i = 0; i < kN; ++i)
    x.setDouble(i, static_cast<double>(i) + 0.5);
  return x;
}

} // namespace kiln::test
