// A warp's mma on the CPU: lane fragments to matrices by the PTX layouts
// (ir/kernel/MmaLayout), a sequential f32 sum, matrices back to fragments.
#include "runtime/sim/SimTensorCore.h"

#include "ir/kernel/MmaLayout.h"
#include "support/Error.h"
#include "support/FloatConvert.h"

#include <array>

namespace kiln::sim {

namespace {

using namespace kiln::kir;

constexpr int kWarpSize = 32;
constexpr int kMaxM = 16, kMaxN = 8, kMaxK = 32;

/// Row-major position in its matrix of each lane-major fragment value, per
/// operand, computed once per kind.
struct FragmentIndices {
  std::array<int, kMaxM * kMaxK> a{};
  std::array<int, kMaxK * kMaxN> b{};
  std::array<int, kMaxM * kMaxN> c{};
};

FragmentIndices computeIndices(MmaKind kind) {
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  KILN_CHECK(info.m <= kMaxM && info.n <= kMaxN && info.k <= kMaxK, "mma shape too large");
  FragmentIndices indices;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int e = 0; e < info.aElements; ++e) {
      MatrixPosition p = mmaFragmentPosition(kind, MmaOperand::A, lane, e);
      indices.a[static_cast<size_t>(lane * info.aElements + e)] = p.row * info.k + p.col;
    }
    for (int e = 0; e < info.bElements; ++e) {
      MatrixPosition p = mmaFragmentPosition(kind, MmaOperand::B, lane, e);
      indices.b[static_cast<size_t>(lane * info.bElements + e)] = p.row * info.n + p.col;
    }
    for (int e = 0; e < info.cElements; ++e) {
      MatrixPosition p = mmaFragmentPosition(kind, MmaOperand::C, lane, e);
      indices.c[static_cast<size_t>(lane * info.cElements + e)] = p.row * info.n + p.col;
    }
  }
  return indices;
}

const FragmentIndices &indicesOf(MmaKind kind) {
  static const std::array<FragmentIndices, 4> all = {
      computeIndices(MmaKind::F16_M16N8K16), computeIndices(MmaKind::BF16_M16N8K16),
      computeIndices(MmaKind::TF32_M16N8K8), computeIndices(MmaKind::E4M3_M16N8K32)};
  switch (kind) {
  case MmaKind::F16_M16N8K16: return all[0];
  case MmaKind::BF16_M16N8K16: return all[1];
  case MmaKind::TF32_M16N8K8: return all[2];
  case MmaKind::E4M3_M16N8K32: return all[3];
  }
  KILN_UNREACHABLE("mma kind");
}

float operandValue(MmaKind kind, double value) {
  float v = static_cast<float>(value); // exact: the buffers hold f16/bf16/e4m3/f32 values
  return kind == MmaKind::TF32_M16N8K8 ? roundFloatToTf32(v) : v;
}

} // namespace

void warpMma(MmaKind kind, std::span<const double> a, std::span<const double> b,
             std::span<const float> c, std::span<float> d) {
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  const FragmentIndices &indices = indicesOf(kind);
  KILN_CHECK(a.size() == static_cast<size_t>(kWarpSize * info.aElements) &&
                 b.size() == static_cast<size_t>(kWarpSize * info.bElements) &&
                 c.size() == static_cast<size_t>(kWarpSize * info.cElements) &&
                 d.size() == c.size(),
             "warpMma fragment sizes");
  std::array<float, kMaxM * kMaxK> matrixA{};
  std::array<float, kMaxK * kMaxN> matrixB{};
  std::array<float, kMaxM * kMaxN> matrixC{};
  for (size_t i = 0; i < a.size(); ++i)
    matrixA[static_cast<size_t>(indices.a[i])] = operandValue(kind, a[i]);
  for (size_t i = 0; i < b.size(); ++i)
    matrixB[static_cast<size_t>(indices.b[i])] = operandValue(kind, b[i]);
  for (size_t i = 0; i < c.size(); ++i)
    matrixC[static_cast<size_t>(indices.c[i])] = c[i];
  const int m = info.m, n = info.n, k = info.k;
  std::array<float, kMaxM * kMaxN> matrixD{};
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float sum = matrixC[static_cast<size_t>(i * n + j)];
      for (int p = 0; p < k; ++p) {
        // The product in double, rounded once to f32 (exact in range).
        double product = static_cast<double>(matrixA[static_cast<size_t>(i * k + p)]) *
                         static_cast<double>(matrixB[static_cast<size_t>(p * n + j)]);
        sum += static_cast<float>(product);
      }
      matrixD[static_cast<size_t>(i * n + j)] = sum;
    }
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = matrixD[static_cast<size_t>(indices.c[i])];
}

void warpgroupMma(int n, int k, std::span<const double> a, std::span<const double> b,
                  std::span<float> d, bool accumulate) {
  constexpr int m = 64;
  KILN_CHECK(a.size() == size_t(m) * size_t(k) && b.size() == size_t(k) * size_t(n) &&
                 d.size() == size_t(m) * size_t(n),
             "warpgroupMma operand sizes");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float sum = accumulate ? d[static_cast<size_t>(i * n + j)] : 0.0f;
      for (int p = 0; p < k; ++p) {
        double product = static_cast<double>(static_cast<float>(a[static_cast<size_t>(i * k + p)])) *
                         static_cast<double>(static_cast<float>(b[static_cast<size_t>(p * n + j)]));
        sum += static_cast<float>(product);
      }
      d[static_cast<size_t>(i * n + j)] = sum;
    }
}

} // namespace kiln::sim
