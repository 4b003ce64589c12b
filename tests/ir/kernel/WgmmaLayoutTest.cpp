// The layouts of kir::Wgmma pinned against the PTX ISA ("Asynchronous Warpgroup Level Matrix
// Register Fragments", "Shared Memory Matrix Layout", "Matrix Descriptor Format"): a few
// accumulators worked out by hand, every D element held exactly once per warpgroup, the
// descriptor's bit fields, and operand addresses of both canonical 128-byte swizzled layouts
// worked out by hand from the ISA's strides and swizzle.
#include "ir/kernel/WgmmaLayout.h"

#include "ir/kernel/Builder.h"

#include <catch2/catch.hpp>

#include <set>

using namespace kiln;
using namespace kiln::kir;

TEST_CASE("wgmma accumulators: the mma C layout per n8 block, 16 rows per warp", "[kir][wgmma]") {
  struct Case {
    int thread, element, row, col;
  };
  for (const Case &c : {Case{0, 0, 0, 0}, {0, 1, 0, 1}, {0, 2, 8, 0}, {0, 3, 8, 1},
                        {0, 4, 0, 8}, {0, 127, 8, 249}, {5, 0, 1, 2}, {37, 0, 17, 2},
                        {127, 6, 63, 14}}) {
    INFO("thread " << c.thread << " element " << c.element);
    MatrixPosition p = wgmmaAccumulatorPosition(c.thread, c.element);
    CHECK(p.row == c.row);
    CHECK(p.col == c.col);
  }
  for (int n : {8, 64, 256}) {
    std::set<std::pair<int, int>> seen;
    for (int thread = 0; thread < kWarpgroupThreads; ++thread)
      for (int e = 0; e < n / 2; ++e) {
        MatrixPosition p = wgmmaAccumulatorPosition(thread, e);
        CHECK(p.row >= 0);
        CHECK(p.row < 64);
        CHECK(p.col < n);
        seen.insert({p.row, p.col});
      }
    CHECK(seen.size() == size_t(64 * n));
  }
  CHECK(isWgmmaN(8));
  CHECK(isWgmmaN(256));
  CHECK_FALSE(isWgmmaN(12));
  CHECK_FALSE(isWgmmaN(264));
  CHECK(wgmmaPtxShape(WgmmaKind::BF16_K16, 128) == "m64n128k16.f32.bf16.bf16");
  CHECK(wgmmaPtxShape(WgmmaKind::E4M3_K32, 8) == "m64n8k32.f32.e4m3.e4m3");
}

TEST_CASE("wgmma descriptors: the ISA's bit fields", "[kir][wgmma]") {
  // Start 0x1400 (>> 4 = 0x140), LBO 16 (1), SBO 1024 (64), 128-byte swizzle (1 at bit 62).
  uint64_t bits = encodeWgmmaDescriptor({0x1400, 16, 1024, 0, 1});
  CHECK(bits == (0x140ull | 1ull << 16 | 64ull << 32 | 1ull << 62));
  WgmmaDescriptor back = decodeWgmmaDescriptor(bits);
  CHECK(back.startAddress == 0x1400);
  CHECK(back.leadingBytes == 16);
  CHECK(back.strideBytes == 1024);
  CHECK(back.swizzle == 1);
  CHECK(back.baseOffset == 0);
  // 18 address bits survive; the low 4 of each field are dropped.
  CHECK(decodeWgmmaDescriptor(encodeWgmmaDescriptor({0x4001F, 8208, 0, 5, 1})).startAddress ==
        0x10);
  CHECK(decodeWgmmaDescriptor(encodeWgmmaDescriptor({0, 8208, 0, 5, 1})).leadingBytes == 8208);
  CHECK(decodeWgmmaDescriptor(encodeWgmmaDescriptor({0, 0, 0, 5, 1})).baseOffset == 5);
}

TEST_CASE("wgmma operands: the canonical 128-byte swizzled layouts", "[kir][wgmma]") {
  // The swizzle: 16-byte chunk (bits 4..6) XOR row of the 1024-byte atom (bits 7..9).
  CHECK(swizzle128(0x80) == 0x90);
  CHECK(swizzle128(0x3F0) == 0x380);
  CHECK(swizzle128(0x400) == 0x400);
  // K-major bf16: row mn at (mn % 8) * 128 + (mn / 8) * SBO, K contiguous in it. mn 9, k 3:
  // 1024 + 128 + 6 = 1158, row 1 of its atom: chunk 0 -> 1, so 1174.
  WgmmaDescriptor kMajor{0, 16, 1024, 0, 1};
  CHECK(wgmmaOperandAddress(kMajor, false, 2, 9, 3) == 1174);
  // A start 32 bytes into the row (the second k16 step) reads chunks 2..3, swizzled by row.
  WgmmaDescriptor secondStep{32, 16, 1024, 0, 1};
  CHECK(wgmmaOperandAddress(secondStep, false, 2, 0, 0) == 32);
  CHECK(wgmmaOperandAddress(secondStep, false, 2, 3, 0) == (3 * 128 + (2 ^ 3) * 16));
  // MN-major bf16: 64 M/N indices per 128-byte row, a row per k, SBO per 8 k, LBO per panel.
  // mn 67 = panel 1 index 3, k 9 = atom 1 row 1: 8192 + 6 + 1024 + 128 = 9350 -> chunk 0 ^ 1.
  WgmmaDescriptor mnMajor{0, 8192, 1024, 0, 1};
  CHECK(wgmmaOperandAddress(mnMajor, true, 2, 67, 9) == 9366);
  // e4m3 K-major: 128 K per row; k 31 of row 2 is byte 31 of chunk 1 ^ 2 = 3.
  CHECK(wgmmaOperandAddress(kMajor, false, 1, 2, 31) == 2 * 128 + 3 * 16 + 15);
}

TEST_CASE("wgmma products: what makes one malformed", "[kir][wgmma]") {
  auto acc = makeBuffer("acc", DType::F32, 64, MemScope::Register);
  auto tile = makeBuffer("tile", DType::BF16, 8192, MemScope::Shared);
  SharedMatrix operand{tile, index(0), false, 16, 1024};
  auto problem = [&](WgmmaKind kind, int n, Fragment d, SharedMatrix a, SharedMatrix b) {
    std::optional<std::string> why = wgmmaProblem(kind, n, d, a, b);
    return why.value_or("");
  };
  using Catch::Matchers::Contains;
  CHECK(problem(WgmmaKind::BF16_K16, 128, {acc, 0}, operand, operand).empty());
  CHECK_THAT(problem(WgmmaKind::BF16_K16, 12, {acc, 0}, operand, operand), Contains("n must be"));
  CHECK_THAT(problem(WgmmaKind::BF16_K16, 256, {acc, 0}, operand, operand), Contains("outside"));
  CHECK_THAT(problem(WgmmaKind::F16_K16, 64, {acc, 0}, operand, operand),
             Contains("shared buffer of f16"));
  SharedMatrix odd = operand;
  odd.strideBytes = 1000;
  CHECK_THAT(problem(WgmmaKind::BF16_K16, 64, {acc, 0}, operand, odd), Contains("multiples of 16"));
  auto registers = makeBuffer("r", DType::BF16, 8192, MemScope::Register);
  CHECK_THAT(problem(WgmmaKind::BF16_K16, 64, {acc, 0}, {registers, index(0), false, 16, 1024},
                     operand),
             Contains("operand a must be a shared buffer"));
}
