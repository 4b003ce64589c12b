#include "ir/kernel/MmaLayout.h"

#include "support/Error.h"

namespace kiln::kir {

const MmaShapeInfo &mmaShapeInfo(MmaKind kind) {
  static const MmaShapeInfo f16{16, 8, 16, DType::F16, 8, 4, 4, 80,
                                "m16n8k16.row.col.f32.f16.f16.f32"};
  static const MmaShapeInfo bf16{16, 8, 16, DType::BF16, 8, 4, 4, 80,
                                 "m16n8k16.row.col.f32.bf16.bf16.f32"};
  static const MmaShapeInfo tf32{16, 8, 8, DType::F32, 4, 2, 4, 80,
                                 "m16n8k8.row.col.f32.tf32.tf32.f32"};
  static const MmaShapeInfo e4m3{16, 8, 32, DType::F8E4M3, 16, 8, 4, 89,
                                 "m16n8k32.row.col.f32.e4m3.e4m3.f32"};
  switch (kind) {
  case MmaKind::F16_M16N8K16: return f16;
  case MmaKind::BF16_M16N8K16: return bf16;
  case MmaKind::TF32_M16N8K8: return tf32;
  case MmaKind::E4M3_M16N8K32: return e4m3;
  }
  KILN_UNREACHABLE("mma kind");
}

std::string_view mmaKindName(MmaKind kind) {
  switch (kind) {
  case MmaKind::F16_M16N8K16: return "f16.m16n8k16";
  case MmaKind::BF16_M16N8K16: return "bf16.m16n8k16";
  case MmaKind::TF32_M16N8K8: return "tf32.m16n8k8";
  case MmaKind::E4M3_M16N8K32: return "e4m3.m16n8k32";
  }
  KILN_UNREACHABLE("mma kind");
}

MatrixPosition mmaFragmentPosition(MmaKind kind, MmaOperand operand, int lane, int element) {
  KILN_CHECK(lane >= 0 && lane < 32, "mma lane out of range");
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  const int group = lane / 4;          // the ISA's groupID
  const int threadInGroup = lane % 4;  // threadID_in_group
  const int i = element;
  if (operand == MmaOperand::C) {
    KILN_CHECK(i >= 0 && i < info.cElements, "mma C element out of range");
    return {group + 8 * (i / 2), threadInGroup * 2 + i % 2};
  }
  switch (kind) {
  case MmaKind::F16_M16N8K16:
  case MmaKind::BF16_M16N8K16:
    // Pairs of 16-bit values: A rows g / g+8 alternate every pair, columns
    // step by 8 after four values; B columns are g, rows step by 8 after two.
    if (operand == MmaOperand::A) {
      KILN_CHECK(i >= 0 && i < 8, "mma A element out of range");
      return {group + 8 * ((i / 2) % 2), threadInGroup * 2 + i % 2 + 8 * (i / 4)};
    }
    KILN_CHECK(i >= 0 && i < 4, "mma B element out of range");
    return {threadInGroup * 2 + i % 2 + 8 * (i / 2), group};
  case MmaKind::TF32_M16N8K8:
    if (operand == MmaOperand::A) {
      KILN_CHECK(i >= 0 && i < 4, "mma A element out of range");
      return {group + 8 * (i % 2), threadInGroup + 4 * (i / 2)};
    }
    KILN_CHECK(i >= 0 && i < 2, "mma B element out of range");
    return {threadInGroup + 4 * i, group};
  case MmaKind::E4M3_M16N8K32:
    // Quads of 8-bit values, laid out as the 16-bit case with doubled columns.
    if (operand == MmaOperand::A) {
      KILN_CHECK(i >= 0 && i < 16, "mma A element out of range");
      return {group + 8 * ((i / 4) % 2), threadInGroup * 4 + i % 4 + 16 * (i / 8)};
    }
    KILN_CHECK(i >= 0 && i < 8, "mma B element out of range");
    return {threadInGroup * 4 + i % 4 + 16 * (i / 4), group};
  }
  KILN_UNREACHABLE("mma kind");
}

MatrixPosition ldMatrixPosition(bool transpose, int lane, int element) {
  KILN_CHECK(lane >= 0 && lane < 32 && element >= 0 && element < 8, "ldmatrix lane or element");
  int row = lane / 4, col = (lane % 4) * 2 + element % 2;
  if (transpose)
    return {col, row};
  return {row, col};
}

int ldMatrixElementsPerMatrix(int elementBytes) {
  KILN_CHECK(elementBytes == 1 || elementBytes == 2, "ldmatrix moves 8- or 16-bit elements");
  return 4 / elementBytes;
}

LdMatrixElement ldMatrixElement(int elementBytes, bool transpose, int lane, int element) {
  KILN_CHECK(elementBytes == 2 || !transpose, "ldmatrix .trans moves 16-bit elements only");
  int perMatrix = ldMatrixElementsPerMatrix(elementBytes);
  int matrix = element / perMatrix, within = element % perMatrix;
  int perHalf = 2 / elementBytes; // elements in one 16-bit value
  MatrixPosition half = ldMatrixPosition(transpose, lane, within / perHalf);
  return {matrix, {half.row, half.col * perHalf + within % perHalf}};
}

} // namespace kiln::kir
