// TensorType helpers: element counts, strides, symbolic sizes and the canonical text form.
#include "ir/graph/TensorType.h"

#include <fmt/format.h>

namespace kiln::ir {

int64_t TensorType::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

Expected<SizeExpr> sizeOverAxes(const TensorType &type, std::span<const int64_t> axes) {
  SizeExpr count(1);
  for (int64_t axis : axes) {
    KILN_TRY(count, multiply(count, type.size(axis)));
  }
  return count;
}

SizeExpr TensorType::size(int64_t axis) const {
  return isSymbolic() ? symbolicDims.at(static_cast<size_t>(axis))
                      : SizeExpr(shape.at(static_cast<size_t>(axis)));
}

std::vector<SizeExpr> TensorType::sizes() const {
  if (isSymbolic())
    return symbolicDims;
  return std::vector<SizeExpr>(shape.begin(), shape.end());
}

Expected<TensorType> makeTensorType(DType dtype, std::vector<SizeExpr> sizes) {
  TensorType type{dtype, {}, {}};
  bool symbolic = false;
  for (const SizeExpr &size : sizes) {
    KILN_TRY(SizeInterval range, size.bounds());
    if (range.low < 0)
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("size {} can be negative: its least value over the symbols' "
                                   "ranges is {}",
                                   size.str(), range.low));
    type.shape.push_back(range.high);
    symbolic = symbolic || !size.isConstant();
  }
  if (symbolic)
    type.symbolicDims = std::move(sizes);
  return type;
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

std::string sizesStr(const std::vector<SizeExpr> &sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i)
    out += (i == 0 ? "" : ",") + sizes[i].str();
  return out + "]";
}

std::string TensorType::str() const {
  return std::string(dtypeName(dtype)) + (isSymbolic() ? sizesStr(symbolicDims) : shapeStr(shape));
}

std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

} // namespace kiln::ir
