// HostTensor: a tensor's values in host memory (dtype, shape, packed
// little-endian row-major bytes), with conversions to and from fp64 and seeded
// random fills. Inputs, weights and results cross every API as HostTensors.
#pragma once

#include "support/AlignedBytes.h"
#include "support/DType.h"
#include "support/Error.h"
#include "support/ShapeLimits.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <map>

namespace kiln {

/// A small seeded generator (SplitMix64 core): the same seed gives the same
/// numbers on every machine, unlike std::normal_distribution.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t nextU64();
  /// Uniform in [0, 1).
  double uniform();
  /// Uniform in [low, high).
  double uniform(double low, double high);
  /// Standard normal (Box-Muller).
  double normal();

private:
  uint64_t state_;
};

/// A tensor's values in host memory.
///
/// Two ways to make one: the checked factories (create, fromValues) for
/// shapes and values that come from a user or a file, which return an Error
/// for a negative dimension, more than kMaxElements elements, a size the
/// machine cannot allocate, or a wrong value count; and the asserting
/// constructor and fromDoubles for shapes the caller has already validated
/// (an IR type, a copy of another tensor), where the same problems are
/// compiler bugs (KILN_CHECK).
class HostTensor {
public:
  HostTensor() = default;
  /// Zero-filled. `shape` must be valid (no negative dimension, at most
  /// kMaxElements elements); for unchecked shapes use create().
  HostTensor(DType dtype, std::vector<int64_t> shape);
  /// Its contents unspecified until written, for a buffer a kernel overwrites in full (a
  /// run's outputs): no zero pass over memory the kernel's threads write anyway. The shape
  /// must be valid, as for the constructor.
  static HostTensor uninitialized(DType dtype, std::vector<int64_t> shape);

  /// Zero-filled, for a shape from a user or a file. InvalidArgument when a
  /// dimension is negative, when the shape has more than kMaxElements
  /// elements, or when its bytes cannot be allocated (more than the machine's
  /// physical memory, or std::bad_alloc); the message names the type and the
  /// size.
  static Expected<HostTensor> create(DType dtype, std::vector<int64_t> shape);

  /// The byte size create() would allocate, or the error it would return,
  /// without allocating anything.
  static Expected<int64_t> checkedByteSize(DType dtype, const std::vector<int64_t> &shape);

  /// Each value is rounded to `dtype` (roundToDType) and stored. The shape
  /// must be valid and `values` must hold exactly one value per element; for
  /// unchecked input use fromValues().
  static HostTensor fromDoubles(DType dtype, std::vector<int64_t> shape,
                                std::span<const double> values);
  /// fromDoubles for input from a user or a file: the errors of create(), and
  /// ShapeMismatch when the number of values is not the element count.
  static Expected<HostTensor> fromValues(DType dtype, std::vector<int64_t> shape,
                                         std::span<const double> values);
  /// A tensor that reads `bytes`, memory someone else owns (a numpy array, a torch tensor),
  /// in place: `owner` lives as long as the tensor (null when the caller keeps the memory
  /// alive itself). kiln never writes borrowed memory: mutable access (bytes(), as(),
  /// setDouble()) first gives the tensor a copy of its own, and copies of the tensor own
  /// their bytes. InvalidArgument when a dimension is negative, when the shape has more than
  /// kMaxElements elements, when `bytes` is not the shape's byte size, or when its address
  /// lacks the alignment kernels assume (AlignedBytes::isBorrowable: copy such memory).
  static Expected<HostTensor> borrow(DType dtype, std::vector<int64_t> shape,
                                     std::span<const uint8_t> bytes,
                                     std::shared_ptr<const void> owner);
  /// Uniform in [low, high), then rounded to dtype.
  static HostTensor randomUniform(DType dtype, std::vector<int64_t> shape, Rng &rng,
                                  double low = -1.0, double high = 1.0);
  /// Normal(mean, stddev), then rounded to dtype.
  static HostTensor randomNormal(DType dtype, std::vector<int64_t> shape, Rng &rng,
                                 double mean = 0.0, double stddev = 1.0);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const;
  size_t byteSize() const { return bytes_.size(); }
  std::span<uint8_t> bytes() { return bytes_.span(); }
  std::span<const uint8_t> bytes() const { return bytes_.span(); }
  /// Whether the bytes are borrowed memory (borrow()), read in place.
  bool isBorrowed() const { return bytes_.isBorrowed(); }

  /// Element `index` (row-major) converted exactly to fp64.
  double getDouble(int64_t index) const;
  /// Rounds `value` to the dtype and stores it at `index`.
  void setDouble(int64_t index, double value);
  std::vector<double> toDoubles() const;
  /// A copy converted to another dtype with a graph cast's rules: floats round
  /// to nearest even (f8 saturating), float to integer truncates and saturates
  /// (NaN to 0), integer to integer wraps.
  HostTensor castTo(DType dtype) const;

  /// Typed view; `T` must match the dtype's size (uint16_t for f16/bf16,
  /// uint8_t for f8 and bool).
  template <typename T> std::span<T> as() {
    return {reinterpret_cast<T *>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  template <typename T> std::span<const T> as() const {
    return {reinterpret_cast<const T *>(bytes_.data()), bytes_.size() / sizeof(T)};
  }

  /// "f32[2,3]".
  std::string typeStr() const;

private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  /// 64-byte aligned, so kernels can read a tensor in place; owned or borrowed.
  AlignedBytes bytes_;
};

/// Tensors bound by name: graph inputs and parameters going in, outputs coming out.
using NamedTensors = std::map<std::string, HostTensor, std::less<>>;

} // namespace kiln
