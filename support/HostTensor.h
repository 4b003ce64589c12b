// HostTensor: a tensor's values in host memory (dtype, shape, packed
// little-endian row-major bytes), with conversions to and from fp64 and seeded
// random fills. Inputs, weights and results cross every API as HostTensors.
#pragma once

#include "support/DType.h"
#include "support/Error.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

class HostTensor {
public:
  HostTensor() = default;
  /// Zero-filled.
  HostTensor(DType dtype, std::vector<int64_t> shape);

  /// Each value is rounded to `dtype` (roundToDType) and stored.
  static HostTensor fromDoubles(DType dtype, std::vector<int64_t> shape,
                                std::span<const double> values);
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
  std::span<uint8_t> bytes() { return bytes_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  /// Element `index` (row-major) converted exactly to fp64.
  double getDouble(int64_t index) const;
  /// Rounds `value` to the dtype and stores it at `index`.
  void setDouble(int64_t index, double value);
  std::vector<double> toDoubles() const;
  /// A copy converted to another dtype (rounding each element).
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
  std::vector<uint8_t> bytes_;
};

} // namespace kiln
