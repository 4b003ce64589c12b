// The lane layouts of kir::Mma fragments and of LdMatrix, pinned against the
// PTX ISA ("Matrix fragments for mma.m16n8k16 / m16n8k8 / m16n8k32",
// ldmatrix): a few lanes and elements per operand worked out by hand from
// the ISA's formulas, and every matrix element held exactly once per warp.
#include "ir/kernel/MmaLayout.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace kiln;
using namespace kiln::kir;

namespace {

struct Expected {
  int lane, element, row, col;
};

void checkPositions(MmaKind kind, MmaOperand operand, std::initializer_list<Expected> cases) {
  for (const Expected &e : cases) {
    MatrixPosition p = mmaFragmentPosition(kind, operand, e.lane, e.element);
    INFO(mmaKindName(kind) << " operand " << static_cast<int>(operand) << " lane " << e.lane
                           << " element " << e.element);
    CHECK(p.row == e.row);
    CHECK(p.col == e.col);
  }
}

const MmaKind kAllKinds[] = {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16,
                             MmaKind::TF32_M16N8K8, MmaKind::E4M3_M16N8K32};

} // namespace

TEST_CASE("mma shapes and fragment sizes", "[kernel][mma]") {
  for (MmaKind kind : kAllKinds) {
    const MmaShapeInfo &info = mmaShapeInfo(kind);
    INFO(mmaKindName(kind));
    CHECK(info.m * info.k == 32 * info.aElements);
    CHECK(info.k * info.n == 32 * info.bElements);
    CHECK(info.m * info.n == 32 * info.cElements);
  }
  CHECK(mmaShapeInfo(MmaKind::TF32_M16N8K8).operandDtype == DType::F32);
  CHECK(mmaShapeInfo(MmaKind::E4M3_M16N8K32).minSm == 89);
  CHECK(mmaShapeInfo(MmaKind::BF16_M16N8K16).ptxName == "m16n8k16.row.col.f32.bf16.bf16.f32");
}

// groupID = lane >> 2, threadID_in_group = lane % 4 in every formula below.
TEST_CASE("mma.m16n8k16 f16/bf16 fragments follow the PTX ISA", "[kernel][mma]") {
  for (MmaKind kind : {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16}) {
    // A: row = groupID for a0, a1, a4, a5, else groupID + 8;
    //    col = threadID_in_group * 2 + (i & 1), + 8 for a4..a7.
    checkPositions(kind, MmaOperand::A,
                   {{0, 0, 0, 0}, {5, 6, 9, 10}, {31, 7, 15, 15}, {14, 3, 11, 5},
                    {22, 4, 5, 12}, {9, 1, 2, 3}});
    // B: row = threadID_in_group * 2 + (i & 1), + 8 for b2, b3; col = groupID.
    checkPositions(kind, MmaOperand::B,
                   {{5, 3, 11, 1}, {30, 0, 4, 7}, {11, 1, 7, 2}, {0, 2, 8, 0}});
    // C/D: row = groupID for c0, c1, else groupID + 8; col = threadID_in_group * 2 + (i & 1).
    checkPositions(kind, MmaOperand::C, {{5, 2, 9, 2}, {31, 3, 15, 7}, {8, 1, 2, 1}});
  }
}

TEST_CASE("mma.m16n8k8 tf32 fragments follow the PTX ISA", "[kernel][mma]") {
  // A: row = groupID for a0, a2, groupID + 8 for a1, a3;
  //    col = threadID_in_group for a0, a1, threadID_in_group + 4 for a2, a3.
  checkPositions(MmaKind::TF32_M16N8K8, MmaOperand::A,
                 {{5, 1, 9, 1}, {5, 2, 1, 5}, {31, 3, 15, 7}, {12, 0, 3, 0}});
  // B: row = threadID_in_group for b0, threadID_in_group + 4 for b1; col = groupID.
  checkPositions(MmaKind::TF32_M16N8K8, MmaOperand::B, {{5, 1, 5, 1}, {30, 0, 2, 7}});
  checkPositions(MmaKind::TF32_M16N8K8, MmaOperand::C, {{5, 2, 9, 2}, {26, 1, 6, 5}});
}

TEST_CASE("mma.m16n8k32 e4m3 fragments follow the PTX ISA", "[kernel][mma]") {
  // A: row = groupID for 0 <= i < 4 or 8 <= i < 12, else groupID + 8;
  //    col = threadID_in_group * 4 + (i & 3), + 16 for a8..a15.
  checkPositions(MmaKind::E4M3_M16N8K32, MmaOperand::A,
                 {{5, 6, 9, 6}, {5, 13, 9, 21}, {5, 10, 1, 22}, {31, 15, 15, 31}, {0, 3, 0, 3}});
  // B: row = threadID_in_group * 4 + (i & 3), + 16 for b4..b7; col = groupID.
  checkPositions(MmaKind::E4M3_M16N8K32, MmaOperand::B, {{5, 5, 21, 1}, {30, 2, 10, 7}});
  checkPositions(MmaKind::E4M3_M16N8K32, MmaOperand::C, {{6, 3, 9, 5}});
}

TEST_CASE("mma fragments cover each operand exactly once per warp", "[kernel][mma]") {
  for (MmaKind kind : kAllKinds) {
    const MmaShapeInfo &info = mmaShapeInfo(kind);
    struct Operand {
      MmaOperand operand;
      int rows, cols, elements;
    };
    for (Operand o : {Operand{MmaOperand::A, info.m, info.k, info.aElements},
                      Operand{MmaOperand::B, info.k, info.n, info.bElements},
                      Operand{MmaOperand::C, info.m, info.n, info.cElements}}) {
      INFO(mmaKindName(kind) << " operand " << static_cast<int>(o.operand));
      std::vector<int> seen(static_cast<size_t>(o.rows * o.cols), 0);
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < o.elements; ++e) {
          MatrixPosition p = mmaFragmentPosition(kind, o.operand, lane, e);
          REQUIRE(p.row >= 0);
          REQUIRE(p.row < o.rows);
          REQUIRE(p.col >= 0);
          REQUIRE(p.col < o.cols);
          ++seen[static_cast<size_t>(p.row * o.cols + p.col)];
        }
      for (int count : seen)
        REQUIRE(count == 1);
    }
  }
}

TEST_CASE("ldmatrix fragments follow the PTX ISA", "[kernel][mma]") {
  // Without .trans a group of four lanes receives one row: lane l gets row
  // l / 4, columns 2 (l % 4) and 2 (l % 4) + 1; .trans gives the transpose.
  struct Case {
    int lane, element, row, col;
  };
  for (Case c : {Case{0, 0, 0, 0}, Case{5, 1, 1, 3}, Case{31, 0, 7, 6}, Case{18, 7, 4, 5}}) {
    MatrixPosition p = ldMatrixPosition(false, c.lane, c.element);
    CHECK(p.row == c.row);
    CHECK(p.col == c.col);
    MatrixPosition t = ldMatrixPosition(true, c.lane, c.element);
    CHECK(t.row == c.col);
    CHECK(t.col == c.row);
  }
  for (bool transpose : {false, true}) {
    std::vector<int> seen(64, 0);
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < 2; ++e) {
        MatrixPosition p = ldMatrixPosition(transpose, lane, e);
        ++seen[static_cast<size_t>(p.row * 8 + p.col)];
        // The same position for every matrix of an .x2 or .x4 load.
        MatrixPosition q = ldMatrixPosition(transpose, lane, e + 6);
        CHECK((q.row == p.row && q.col == p.col));
      }
    for (int count : seen)
      REQUIRE(count == 1);
  }
  // ldmatrix .trans of a row-major k x n tile yields the mma B fragment of
  // m16n8k16 (the usual way B reaches the tensor cores).
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 4; ++e) {
      MatrixPosition b = mmaFragmentPosition(MmaKind::F16_M16N8K16, MmaOperand::B, lane, e);
      MatrixPosition t = ldMatrixPosition(true, lane, e);
      CHECK(b.row == t.row + 8 * (e / 2));
      CHECK(b.col == t.col);
    }
}

TEST_CASE("ldmatrix of 8-bit elements gives the e4m3 mma fragments", "[ir][mma]") {
  CHECK(ldMatrixElementsPerMatrix(2) == 2);
  CHECK(ldMatrixElementsPerMatrix(1) == 4);
  // 16-bit elements: ldMatrixElement is ldMatrixPosition with the matrix split off.
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 8; ++e) {
      LdMatrixElement at = ldMatrixElement(2, true, lane, e);
      MatrixPosition p = ldMatrixPosition(true, lane, e);
      CHECK(at.matrix == e / 2);
      CHECK((at.position.row == p.row && at.position.col == p.col));
    }
  // Bytes: lane l gets row l / 4, bytes 4 (l % 4) .. + 3 of each 8 x 16-byte matrix.
  CHECK(ldMatrixElement(1, false, 0, 0).position.col == 0);
  CHECK(ldMatrixElement(1, false, 5, 3).position.row == 1);
  CHECK(ldMatrixElement(1, false, 5, 3).position.col == 7);
  CHECK(ldMatrixElement(1, false, 31, 13).matrix == 3);
  CHECK(ldMatrixElement(1, false, 31, 13).position.col == 13);
  // An .x4 over a K-contiguous 16 x 32 A tile -- matrices (rows 0-7, k 0-15), (rows 8-15,
  // k 0-15), (rows 0-7, k 16-31), (rows 8-15, k 16-31) -- is the m16n8k32 A fragment, and an
  // .x2 over an N-major 8 x 32 B tile -- (n 0-7, k 0-15), (n 0-7, k 16-31) -- the B fragment.
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < 16; ++e) {
      LdMatrixElement at = ldMatrixElement(1, false, lane, e);
      MatrixPosition a = mmaFragmentPosition(MmaKind::E4M3_M16N8K32, MmaOperand::A, lane, e);
      CHECK(a.row == at.position.row + 8 * (at.matrix % 2));
      CHECK(a.col == at.position.col + 16 * (at.matrix / 2));
    }
    for (int e = 0; e < 8; ++e) {
      LdMatrixElement at = ldMatrixElement(1, false, lane, e);
      MatrixPosition b = mmaFragmentPosition(MmaKind::E4M3_M16N8K32, MmaOperand::B, lane, e);
      CHECK(b.col == at.position.row); // n
      CHECK(b.row == at.position.col + 16 * at.matrix); // k
    }
  }
}
