// The shapes of kiln's warp-level matrix products (kir::Mma) and the lane
// layouts of their fragments and of ldmatrix, as the PTX ISA defines them
// ("Matrix fragments for mma.m16n8k16 / m16n8k8 / m16n8k32"). GPU lowering
// places data by these functions, the simulator executes Mma and LdMatrix by
// them, and tests pin them against the ISA's tables.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <string_view>

namespace kiln::kir {

struct MmaShapeInfo {
  int m = 16, n = 8, k = 16;
  DType operandDtype = DType::F16; ///< the A and B fragments' buffer dtype (F32 for tf32)
  int aElements = 8;               ///< per lane
  int bElements = 4;               ///< per lane
  int cElements = 4;               ///< per lane, C and D (f32)
  int minSm = 80;                  ///< the oldest compute capability (x10) that has it
  std::string_view ptxName;        ///< e.g. "m16n8k16.row.col.f32.bf16.bf16.f32"
};

const MmaShapeInfo &mmaShapeInfo(MmaKind kind);
std::string_view mmaKindName(MmaKind kind); ///< "f16.m16n8k16", "bf16.m16n8k16", ...

/// A position in a matrix.
struct MatrixPosition {
  int row = 0;
  int col = 0;
};

enum class MmaOperand { A, B, C };

/// The (row, column) of the matrix element that lane `lane` (0..31) holds as
/// its `element`-th value of operand `operand` (C also describes D). A is
/// m x k, B is k x n, C is m x n.
MatrixPosition mmaFragmentPosition(MmaKind kind, MmaOperand operand, int lane, int element);

/// The (row, column) in matrix `element / 2` of the `element`-th value (0 ..
/// 2 matrices - 1) that lane `lane` receives from an LdMatrix.
MatrixPosition ldMatrixPosition(bool transpose, int lane, int element);

/// Elements of `elementBytes` (2, or 1 without transpose) a lane receives per LdMatrix matrix:
/// 2 16-bit values, or 4 bytes (each 16-bit value of the matrix is a pair of bytes, the low
/// one first).
int ldMatrixElementsPerMatrix(int elementBytes);

/// The matrix and the (row, column in elements) of the `element`-th value a lane receives
/// from an LdMatrix of `elementBytes`-wide elements.
struct LdMatrixElement {
  int matrix = 0;
  MatrixPosition position;
};
LdMatrixElement ldMatrixElement(int elementBytes, bool transpose, int lane, int element);

} // namespace kiln::kir
