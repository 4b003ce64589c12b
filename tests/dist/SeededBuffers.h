// Test support for tests/dist: buffers of any dtype read and written as doubles, every
// rank's seeded inputs (any rank can make any other's), and the check of an all-reduce
// against the sum computed from them.
#pragma once

#include "runtime/dist/Communicator.h"
#include "support/FloatConvert.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace kiln::test::dist {

using namespace kiln::runtime::dist;

/// The communicator test_dist's main opened: MPI under mpirun, else a single process.
Communicator &communicator();

/// Element counts: one, odd ones below and above a page, and one past 2^16.
inline const std::vector<int64_t> kCounts{1, 7, 1001, 65537};

/// A buffer of `count` elements of `dtype`, with values read and written as doubles.
struct Buffer {
  DType dtype;
  std::vector<std::byte> bytes;

  Buffer(DType type, int64_t count)
      : dtype(type), bytes(static_cast<size_t>(count * dtypeByteSize(type))) {}
  int64_t count() const { return static_cast<int64_t>(bytes.size()) / dtypeByteSize(dtype); }
  void *data() { return bytes.data(); }

  template <typename T> T &at(int64_t i) { return reinterpret_cast<T *>(bytes.data())[i]; }
  double get(int64_t i) {
    switch (dtype) {
    case DType::F64: return at<double>(i);
    case DType::F32: return at<float>(i);
    case DType::F16: return halfBitsToFloat(at<uint16_t>(i));
    case DType::BF16: return bfloat16BitsToFloat(at<uint16_t>(i));
    case DType::I64: return static_cast<double>(at<int64_t>(i));
    case DType::I32: return at<int32_t>(i);
    case DType::I8: return at<int8_t>(i);
    default: FAIL("no test encoding for " << dtypeName(dtype)); return 0;
    }
  }
  void set(int64_t i, double value) {
    switch (dtype) {
    case DType::F64: at<double>(i) = value; break;
    case DType::F32: at<float>(i) = static_cast<float>(value); break;
    case DType::F16: at<uint16_t>(i) = doubleToHalfBits(value); break;
    case DType::BF16: at<uint16_t>(i) = doubleToBFloat16Bits(value); break;
    case DType::I64: at<int64_t>(i) = static_cast<int64_t>(value); break;
    case DType::I32: at<int32_t>(i) = static_cast<int32_t>(value); break;
    case DType::I8: at<int8_t>(i) = static_cast<int8_t>(value); break;
    default: FAIL("no test encoding for " << dtypeName(dtype));
    }
  }
};

/// Rank `rank`'s input for case `salt`: every rank can make every other rank's.
/// Floats in [-2, 2), integers in [-1000, 1000] (i8: [-100, 100]).
inline Buffer seededInput(int rank, DType dtype, int64_t count, uint64_t salt) {
  std::mt19937_64 engine(0x6b696c6eULL * (salt + 1) + static_cast<uint64_t>(rank) * 7919);
  Buffer buffer(dtype, count);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  int64_t bound = dtype == DType::I8 ? 100 : 1000;
  std::uniform_int_distribution<int64_t> integer(-bound, bound);
  for (int64_t i = 0; i < count; ++i)
    buffer.set(i, isFloatingPoint(dtype) ? real(engine) : static_cast<double>(integer(engine)));
  return buffer;
}

/// How far a reduced element may be from the exact sum of the stored inputs, relative
/// to the sum of their magnitudes: the accumulation (f32 for the 16-bit types, in any
/// order) plus the final rounding to the buffer's type.
inline double relativeTolerance(DType dtype) {
  switch (dtype) {
  case DType::F64: return 1e-14;
  case DType::F32: return 1e-6;
  case DType::F16: return std::ldexp(1.0, -10);
  case DType::BF16: return std::ldexp(1.0, -7);
  default: return 0; // integers are exact
  }
}

/// Checks `result`, the all-reduce of every rank's seededInput(rank, dtype, count, salt),
/// against the sum (or mean) computed here from the inputs every rank started with.
inline void checkReduced(Buffer &result, int ranks, ReduceOp op, uint64_t salt) {
  DType dtype = result.dtype;
  int64_t count = result.count();
  std::vector<Buffer> inputs;
  for (int rank = 0; rank < ranks; ++rank)
    inputs.push_back(seededInput(rank, dtype, count, salt));
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0, magnitude = 0;
    for (Buffer &input : inputs) {
      sum += input.get(i);
      magnitude += std::abs(input.get(i));
    }
    double expected = op == ReduceOp::Mean ? sum / ranks : sum;
    double scale = op == ReduceOp::Mean ? magnitude / ranks : magnitude;
    double error = std::abs(result.get(i) - expected);
    if (!(error <= relativeTolerance(dtype) * scale)) {
      if (++wrong <= 3)
        UNSCOPED_INFO("element " << i << ": got " << result.get(i) << ", expected " << expected);
    }
  }
  CHECK(wrong == 0);
}

} // namespace kiln::test::dist
