// Column-wise arithmetic for the lockstep machine: one binary op applied to
// the lanes of every active thread. The common index and f32 cases are
// written out inline (the same arithmetic as ScalarOps.cpp, so results are
// bit-identical); everything else goes through kir::binaryLane per lane.
#pragma once

#include "ir/kernel/ScalarOps.h"

#include <cstddef>
#include <cstdint>

namespace kiln::sim {

namespace detail {

template <typename Op>
inline void forActiveLanes(int lanes, size_t threads, const int32_t *ids, int32_t count,
                           const kir::Scalar *x, const kir::Scalar *y, kir::Scalar *out, Op op) {
  for (int l = 0; l < lanes; ++l) {
    size_t base = static_cast<size_t>(l) * threads;
    for (int32_t i = 0; i < count; ++i) {
      size_t at = base + static_cast<size_t>(ids[i]);
      out[at] = op(x[at], y[at]);
    }
  }
}

inline kir::Scalar intOf(int64_t v) { return kir::Scalar::ofInt(v); }
inline kir::Scalar floatOf(float v) { return kir::Scalar::ofFloat(static_cast<double>(v)); }
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

} // namespace detail

/// out[l][t] = op(x[l][t], y[l][t]) for every lane l and active thread t
/// (columns of `threads` entries per lane).
inline void binaryColumns(kir::BinaryOp op, DType dtype, int lanes, size_t threads,
                          const int32_t *ids, int32_t count, const kir::Scalar *x,
                          const kir::Scalar *y, kir::Scalar *out) {
  using kir::BinaryOp;
  using kir::Scalar;
  using namespace detail;
  if (dtype == DType::I64) {
    switch (op) {
    case BinaryOp::Add:
      return forActiveLanes(lanes, threads, ids, count, x, y, out,
                            [](Scalar a, Scalar b) { return intOf(wrapAdd(a.i, b.i)); });
    case BinaryOp::Sub:
      return forActiveLanes(lanes, threads, ids, count, x, y, out,
                            [](Scalar a, Scalar b) { return intOf(wrapSub(a.i, b.i)); });
    case BinaryOp::Mul:
      return forActiveLanes(lanes, threads, ids, count, x, y, out,
                            [](Scalar a, Scalar b) { return intOf(wrapMul(a.i, b.i)); });
    case BinaryOp::Lt:
      return forActiveLanes(lanes, threads, ids, count, x, y, out,
                            [](Scalar a, Scalar b) { return intOf(a.i < b.i); });
    case BinaryOp::Ge:
      return forActiveLanes(lanes, threads, ids, count, x, y, out,
                            [](Scalar a, Scalar b) { return intOf(a.i >= b.i); });
    default: break;
    }
  } else if (dtype == DType::F32) {
    switch (op) {
    case BinaryOp::Add:
      return forActiveLanes(lanes, threads, ids, count, x, y, out, [](Scalar a, Scalar b) {
        return floatOf(static_cast<float>(a.f) + static_cast<float>(b.f));
      });
    case BinaryOp::Mul:
      return forActiveLanes(lanes, threads, ids, count, x, y, out, [](Scalar a, Scalar b) {
        return floatOf(static_cast<float>(a.f) * static_cast<float>(b.f));
      });
    default: break;
    }
  }
  forActiveLanes(lanes, threads, ids, count, x, y, out,
                 [op, dtype](Scalar a, Scalar b) { return kir::binaryLane(op, dtype, a, b); });
}

} // namespace kiln::sim
