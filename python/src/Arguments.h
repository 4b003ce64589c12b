// Python argument forms shared by the op functions and the nn layers: layouts, paddings,
// int-or-pair sizes, optional dtypes. A bad one is a kiln.Error at the caller's line.
#pragma once

#include "frontend/Padding.h"
#include "support/DType.h"

#include <pybind11/pybind11.h>

#include <array>
#include <optional>
#include <string>

namespace kiln::python {

/// "nchw" or "nhwc".
Layout layoutNamed(const std::string &name);
/// "valid", "same", an int (every side), (height, width) or (top, bottom, left, right).
Padding paddingOf(const pybind11::object &padding);
/// An int (both axes) or a pair, as Keras takes kernel sizes and strides.
std::array<int64_t, 2> pairOf(const pybind11::object &value);
/// None or a dtype name.
std::optional<DType> optionalDtype(const std::optional<std::string> &name);

} // namespace kiln::python
