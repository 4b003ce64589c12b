// Python argument forms (see Arguments.h).
#include "Arguments.h"

#include "PythonErrors.h"
#include "TensorConversion.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <vector>

namespace py = pybind11;

namespace kiln::python {

std::optional<DType> optionalDtype(const std::optional<std::string> &name) {
  if (!name)
    return std::nullopt;
  return dtypeNamed(*name);
}

Layout layoutNamed(const std::string &name) {
  if (name == "nchw")
    return Layout::NCHW;
  if (name == "nhwc")
    return Layout::NHWC;
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("unknown layout '{}' (use 'nchw' or 'nhwc')", name),
                        pythonCallerLocation())};
}

Padding paddingOf(const py::object &padding) {
  if (py::isinstance<py::str>(padding)) {
    std::string name = padding.cast<std::string>();
    if (name == "valid")
      return Padding::valid();
    if (name == "same")
      return Padding::same();
  } else if (py::isinstance<py::int_>(padding)) {
    int64_t pad = padding.cast<int64_t>();
    return Padding::symmetric(pad, pad);
  } else if (py::isinstance<py::sequence>(padding)) {
    auto pads = padding.cast<std::vector<int64_t>>();
    if (pads.size() == 2)
      return Padding::symmetric(pads[0], pads[1]);
    if (pads.size() == 4)
      return Padding::explicitPads(pads[0], pads[1], pads[2], pads[3]);
  }
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("padding {} is none of 'valid', 'same', an int, (height, "
                                    "width) or (top, bottom, left, right)",
                                    py::repr(padding).cast<std::string>()),
                        pythonCallerLocation())};
}

std::array<int64_t, 2> pairOf(const py::object &value) {
  if (py::isinstance<py::int_>(value)) {
    int64_t size = value.cast<int64_t>();
    return {size, size};
  }
  if (py::isinstance<py::sequence>(value) && !py::isinstance<py::str>(value)) {
    auto sizes = value.cast<std::vector<int64_t>>();
    if (sizes.size() == 2)
      return {sizes[0], sizes[1]};
  }
  throw KilnError{Error(
      ErrorCode::InvalidArgument,
      fmt::format("expected an int or a pair of ints, got {}", py::repr(value).cast<std::string>()),
      pythonCallerLocation())};
}

} // namespace kiln::python
