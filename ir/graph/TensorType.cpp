// TensorType helpers: element counts, strides and the canonical text form.
#include "ir/graph/TensorType.h"

namespace kiln::ir {

int64_t TensorType::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

std::string shapeStr(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0)
      out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

} // namespace kiln::ir
