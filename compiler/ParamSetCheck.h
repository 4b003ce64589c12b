// Whether a set of named tensors is exactly a model's parameters: the check
// behind `kiln aot --weights` and `kiln run --params`, which would otherwise
// run on random values or fail later with a message about the API.
#pragma once

#include "support/HostTensor.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// One parameter a model expects.
struct ExpectedParam {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

/// Every expected parameter present with its dtype and shape and no other
/// name, or one InvalidArgument error listing every tensor that differs:
/// "`what` do not match the model: 1 of the model's 2 parameters missing: 'w'
/// (f32[17,17]); `noun` 'b' is f16[17], the parameter is f32[17]".
Expected<void> checkParamSet(const NamedTensors &given, std::span<const ExpectedParam> expected,
                             std::string_view what, std::string_view noun);

} // namespace kiln
