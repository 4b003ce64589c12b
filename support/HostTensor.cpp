// HostTensor storage and element access for every dtype, and the seeded Rng
// used for reproducible random inputs and weights.
#include "support/HostTensor.h"

#include "support/FloatConvert.h"
#include "support/MemorySize.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <iterator>
#include <new>
#include <numbers>
#include <optional>

namespace kiln {

// Storage is little-endian by definition; on a big-endian host every
// load/store below would need a byte swap.
static_assert(std::endian::native == std::endian::little, "kiln assumes a little-endian host");

uint64_t Rng::nextU64() {
  state_ += 0x9e3779b97f4a7c15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  // The top 53 bits fill a double's significand: every value is k * 2^-53.
  return static_cast<double>(nextU64() >> 11) * 0x1.0p-53;
}

double Rng::uniform(double low, double high) {
  double value = low + (high - low) * uniform();
  // The scaling can round up onto `high`; keep the interval half-open.
  return value < high || !(high > low) ? value : std::nextafter(high, low);
}

double Rng::normal() {
  // 1 - uniform() is in (0, 1], so the log is finite.
  double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
  double angle = 2.0 * std::numbers::pi * uniform();
  return radius * std::cos(angle);
}

namespace {


int64_t countElements(const std::vector<int64_t> &shape) {
  std::optional<int64_t> count = checkedNumElements(shape);
  KILN_CHECK(count.has_value(),
             fmt::format("invalid HostTensor shape [{}] (a negative dimension or more than 2^53 "
                         "elements): unchecked input must go through HostTensor::create",
                         fmt::join(shape, ",")));
  return *count;
}

std::string typeText(DType dtype, const std::vector<int64_t> &shape) {
  return fmt::format("{}[{}]", dtypeName(dtype), fmt::join(shape, ","));
}

/// Bounds check from the byte count: O(1), unlike numElements() (a product
/// over the shape), since element access sits in the interpreter's inner loop.
void checkIndex(const HostTensor &tensor, int64_t index) {
  int64_t count = static_cast<int64_t>(tensor.byteSize()) / dtypeByteSize(tensor.dtype());
  KILN_CHECK(index >= 0 && index < count,
             fmt::format("element {} out of range for {}", index, tensor.typeStr()));
}

template <typename T> T loadAt(const AlignedBytes &bytes, int64_t index) {
  T value;
  std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> void storeAt(AlignedBytes &bytes, int64_t index, T value) {
  std::memcpy(bytes.data() + index * sizeof(T), &value, sizeof(T));
}

} // namespace

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  // count <= 2^53 and byte sizes <= 8, so the product cannot overflow.
  bytes_ = AlignedBytes::zeroed(static_cast<size_t>(countElements(shape_) * dtypeByteSize(dtype_)));
}

HostTensor HostTensor::uninitialized(DType dtype, std::vector<int64_t> shape) {
  HostTensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.bytes_ = AlignedBytes::uninitialized(
      static_cast<size_t>(countElements(tensor.shape_) * dtypeByteSize(dtype)));
  return tensor;
}

Expected<int64_t> HostTensor::checkedByteSize(DType dtype, const std::vector<int64_t> &shape) {
  for (int64_t dim : shape)
    if (dim < 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("cannot make tensor {}: dimension {} is negative",
                                   typeText(dtype, shape), dim));
  std::optional<int64_t> count = checkedNumElements(shape);
  if (!count)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cannot make tensor {}: it has more than 2^53 elements",
                                 typeText(dtype, shape)));
  int64_t bytes = *count * dtypeByteSize(dtype);
  uint64_t memory = physicalMemoryBytes();
  if (memory != 0 && static_cast<uint64_t>(bytes) > memory)
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("cannot allocate tensor {}: it needs {}, more than the {} of "
                                 "physical memory",
                                 typeText(dtype, shape), byteSizeText(static_cast<uint64_t>(bytes)),
                                 byteSizeText(memory)));
  return bytes;
}

Expected<HostTensor> HostTensor::create(DType dtype, std::vector<int64_t> shape) {
  KILN_TRY(int64_t bytes, checkedByteSize(dtype, shape));
  HostTensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  // The allocator is the environment: its failure is an error to report,
  // not a crash (and the size check above cannot know what else is in use).
  try {
    tensor.bytes_ = AlignedBytes::zeroed(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc &) {
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("cannot allocate tensor {}: out of memory for {}",
                                 tensor.typeStr(), byteSizeText(static_cast<uint64_t>(bytes))));
  }
  return tensor;
}

Expected<HostTensor> HostTensor::borrow(DType dtype, std::vector<int64_t> shape,
                                        std::span<const uint8_t> bytes,
                                        std::shared_ptr<const void> owner) {
  // Not checkedByteSize: memory that already exists needs no check against physical memory
  // (a memory-mapped file may be larger).
  for (int64_t dim : shape)
    if (dim < 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("cannot borrow tensor {}: dimension {} is negative",
                                   typeText(dtype, shape), dim));
  std::optional<int64_t> count = checkedNumElements(shape);
  if (!count)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cannot borrow tensor {}: it has more than 2^53 elements",
                                 typeText(dtype, shape)));
  auto expected = static_cast<uint64_t>(*count * dtypeByteSize(dtype));
  if (bytes.size() != expected)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cannot borrow tensor {}: it needs {} bytes, the memory has {}",
                                 typeText(dtype, shape), expected, bytes.size()));
  if (!bytes.empty() && !AlignedBytes::isBorrowable(bytes.data()))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cannot borrow tensor {}: its address {} is not {}-byte aligned, "
                                 "as kernels assume (copy it instead)",
                                 typeText(dtype, shape), static_cast<const void *>(bytes.data()),
                                 kBufferAlignment));
  HostTensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.bytes_ = AlignedBytes::borrowed(bytes.data(), bytes.size(), std::move(owner));
  return tensor;
}

int64_t HostTensor::numElements() const { return countElements(shape_); }

HostTensor HostTensor::fromDoubles(DType dtype, std::vector<int64_t> shape,
                                   std::span<const double> values) {
  HostTensor tensor(dtype, std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == tensor.numElements(),
             fmt::format("fromDoubles: {} values for a {} tensor of {} elements", values.size(),
                         tensor.typeStr(), tensor.numElements()));
  for (size_t i = 0; i < values.size(); ++i)
    tensor.setDouble(static_cast<int64_t>(i), values[i]);
  return tensor;
}

Expected<HostTensor> HostTensor::fromValues(DType dtype, std::vector<int64_t> shape,
                                            std::span<const double> values) {
  // The count is checked before anything is allocated.
  KILN_TRY(int64_t bytes, checkedByteSize(dtype, shape));
  auto count = static_cast<uint64_t>(bytes / dtypeByteSize(dtype));
  if (values.size() != count)
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("{} value{} given for a {} tensor of {} element{}", values.size(),
                                 values.size() == 1 ? "" : "s", typeText(dtype, shape), count,
                                 count == 1 ? "" : "s"));
  KILN_TRY(HostTensor tensor, create(dtype, std::move(shape)));
  for (size_t i = 0; i < values.size(); ++i)
    tensor.setDouble(static_cast<int64_t>(i), values[i]);
  return tensor;
}

HostTensor HostTensor::randomUniform(DType dtype, std::vector<int64_t> shape, Rng &rng, double low,
                                     double high) {
  HostTensor tensor(dtype, std::move(shape));
  int64_t count = tensor.numElements();
  for (int64_t i = 0; i < count; ++i)
    tensor.setDouble(i, rng.uniform(low, high));
  return tensor;
}

HostTensor HostTensor::randomNormal(DType dtype, std::vector<int64_t> shape, Rng &rng, double mean,
                                    double stddev) {
  HostTensor tensor(dtype, std::move(shape));
  int64_t count = tensor.numElements();
  for (int64_t i = 0; i < count; ++i)
    tensor.setDouble(i, mean + stddev * rng.normal());
  return tensor;
}

double HostTensor::getDouble(int64_t index) const {
  checkIndex(*this, index);
  switch (dtype_) {
  case DType::F64: return loadAt<double>(bytes_, index);
  case DType::F32: return loadAt<float>(bytes_, index);
  case DType::F16: return halfBitsToFloat(loadAt<uint16_t>(bytes_, index));
  case DType::BF16: return bfloat16BitsToFloat(loadAt<uint16_t>(bytes_, index));
  case DType::F8E4M3: return f8e4m3BitsToFloat(loadAt<uint8_t>(bytes_, index));
  case DType::F8E5M2: return f8e5m2BitsToFloat(loadAt<uint8_t>(bytes_, index));
  case DType::I64: return static_cast<double>(loadAt<int64_t>(bytes_, index));
  case DType::I32: return loadAt<int32_t>(bytes_, index);
  case DType::I8: return loadAt<int8_t>(bytes_, index);
  case DType::Bool: return loadAt<uint8_t>(bytes_, index) != 0 ? 1.0 : 0.0;
  }
  KILN_UNREACHABLE("invalid DType in HostTensor");
}

void HostTensor::setDouble(int64_t index, double value) {
  checkIndex(*this, index);
  // Encoding directly (not via roundToDType and back) rounds once; the integer
  // cases go through roundToDType, whose results are exact integers.
  switch (dtype_) {
  case DType::F64: return storeAt<double>(bytes_, index, value);
  case DType::F32: return storeAt<float>(bytes_, index, static_cast<float>(value));
  case DType::F16: return storeAt<uint16_t>(bytes_, index, doubleToHalfBits(value));
  case DType::BF16: return storeAt<uint16_t>(bytes_, index, doubleToBFloat16Bits(value));
  case DType::F8E4M3: return storeAt<uint8_t>(bytes_, index, doubleToF8E4M3Bits(value));
  case DType::F8E5M2: return storeAt<uint8_t>(bytes_, index, doubleToF8E5M2Bits(value));
  case DType::I64:
    return storeAt<int64_t>(bytes_, index, static_cast<int64_t>(roundToDType(value, DType::I64)));
  case DType::I32:
    return storeAt<int32_t>(bytes_, index, static_cast<int32_t>(roundToDType(value, DType::I32)));
  case DType::I8:
    return storeAt<int8_t>(bytes_, index, static_cast<int8_t>(roundToDType(value, DType::I8)));
  case DType::Bool: return storeAt<uint8_t>(bytes_, index, value != 0.0 ? 1 : 0);
  }
  KILN_UNREACHABLE("invalid DType in HostTensor");
}

std::vector<double> HostTensor::toDoubles() const {
  int64_t count = numElements();
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[static_cast<size_t>(i)] = getDouble(i);
  return values;
}

namespace {

/// An integer element read without passing through fp64, which would round
/// int64 values beyond 2^53.
int64_t loadInteger(const HostTensor &tensor, int64_t index) {
  auto bytes = tensor.bytes();
  switch (tensor.dtype()) {
  case DType::I64: {
    int64_t value;
    std::memcpy(&value, bytes.data() + index * 8, 8);
    return value;
  }
  case DType::I32: {
    int32_t value;
    std::memcpy(&value, bytes.data() + index * 4, 4);
    return value;
  }
  case DType::I8: return static_cast<int8_t>(bytes[static_cast<size_t>(index)]);
  case DType::Bool: return bytes[static_cast<size_t>(index)] != 0 ? 1 : 0;
  default: KILN_UNREACHABLE("loadInteger on a floating-point tensor");
  }
}

} // namespace

HostTensor HostTensor::castTo(DType dtype) const {
  if (dtype == dtype_)
    return *this;
  HostTensor result(dtype, shape_);
  int64_t count = numElements();
  bool exactIntegerPath = !isFloatingPoint(dtype_) && !isFloatingPoint(dtype);
  for (int64_t i = 0; i < count; ++i) {
    // Through fp64: exact for every float source; an int64 beyond 2^53 is
    // rounded to fp64 first, then to the destination float type. Float to
    // integer saturates, as a graph cast does.
    if (!exactIntegerPath) {
      double value = getDouble(i);
      if (isFloatingPoint(dtype_) && isInteger(dtype))
        value = convertFloatToInteger(value, dtype);
      result.setDouble(i, value);
      continue;
    }
    // Integer-to-integer casts wrap two's-complement, like C++ conversions.
    int64_t value = loadInteger(*this, i);
    switch (dtype) {
    case DType::I64: storeAt<int64_t>(result.bytes_, i, value); break;
    case DType::I32: storeAt<int32_t>(result.bytes_, i, static_cast<int32_t>(value)); break;
    case DType::I8: storeAt<int8_t>(result.bytes_, i, static_cast<int8_t>(value)); break;
    case DType::Bool: storeAt<uint8_t>(result.bytes_, i, value != 0 ? 1 : 0); break;
    default: KILN_UNREACHABLE("unreachable: floating-point destination");
    }
  }
  return result;
}

std::string HostTensor::typeStr() const { return typeText(dtype_, shape_); }

} // namespace kiln
