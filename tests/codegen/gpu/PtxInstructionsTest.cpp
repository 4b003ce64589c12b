// The table of GPU instructions (codegen/PtxInstructions.h): every instruction's text names
// each of its operands and no other, outputs come first, and the architecture check refuses
// the targets that lack it, naming the instruction.
#include "codegen/PtxInstructions.h"

#include "ir/kernel/MmaLayout.h"

#include <catch2/catch.hpp>

#include <regex>
#include <set>

using namespace kiln;
using namespace kiln::codegen;

namespace {

/// Every instruction kiln emits, in each of its forms.
std::vector<InlinePtx> everyInstruction() {
  std::vector<InlinePtx> all;
  for (kir::MmaKind kind : {kir::MmaKind::F16_M16N8K16, kir::MmaKind::BF16_M16N8K16,
                            kir::MmaKind::TF32_M16N8K8, kir::MmaKind::E4M3_M16N8K32})
    all.push_back(mmaSync(kind));
  for (int matrices : {1, 2, 4})
    for (bool transpose : {false, true})
      all.push_back(ldMatrix(matrices, transpose));
  for (int bytes : {4, 8, 16})
    for (bool sourceBytes : {false, true})
      all.push_back(cpAsync(bytes, sourceBytes));
  all.push_back(cpAsyncCommit());
  all.push_back(cpAsyncWait(1));
  for (kir::WgmmaKind kind : {kir::WgmmaKind::F16_K16, kir::WgmmaKind::BF16_K16,
                              kir::WgmmaKind::TF32_K8, kir::WgmmaKind::E4M3_K32})
    for (int n : {8, 64, 256})
      for (bool accumulate : {false, true})
        all.push_back(wgmmaMmaAsync(kind, n, false, false, accumulate));
  for (kir::WgmmaSyncOp op : {kir::WgmmaSyncOp::Fence, kir::WgmmaSyncOp::SharedFence,
                              kir::WgmmaSyncOp::Commit, kir::WgmmaSyncOp::Wait})
    all.push_back(wgmmaSync(op, 1));
  for (kir::MbarrierOp op : {kir::MbarrierOp::Init, kir::MbarrierOp::Arrive,
                             kir::MbarrierOp::ArriveExpectTx, kir::MbarrierOp::Wait})
    all.push_back(mbarrier(op));
  for (int rank = 1; rank <= 5; ++rank)
    all.push_back(bulkTensorLoad(rank));
  return all;
}

} // namespace

TEST_CASE("each instruction's text names exactly its operands, outputs first", "[ptx]") {
  for (const InlinePtx &instruction : everyInstruction()) {
    INFO(instruction.text);
    CHECK_FALSE(instruction.mnemonic.empty());
    CHECK(instruction.text.find(instruction.mnemonic) != std::string::npos);
    std::set<int> named;
    const std::regex operand("%([0-9]+)");
    for (auto it = std::sregex_iterator(instruction.text.begin(), instruction.text.end(), operand);
         it != std::sregex_iterator(); ++it)
      named.insert(std::stoi((*it)[1]));
    std::set<int> expected;
    for (int i = 0; i < static_cast<int>(instruction.constraints.size()); ++i)
      expected.insert(i);
    CHECK(named == expected);
    int outputs = instruction.outputCount();
    for (int i = 0; i < static_cast<int>(instruction.constraints.size()); ++i) {
      const std::string &constraint = instruction.constraints[static_cast<size_t>(i)];
      bool output = constraint[0] == '=' || constraint[0] == '+';
      CHECK(output == (i < outputs));
      CHECK(std::string("rlf").find(constraint.back()) != std::string::npos);
    }
  }
}

TEST_CASE("operand counts follow the fragment layouts", "[ptx]") {
  // bf16 m16n8k16: 4 f32 outputs, 4 + 2 packed words, 4 f32 inputs.
  InlinePtx mma = mmaSync(kir::MmaKind::BF16_M16N8K16);
  CHECK(mma.outputCount() == 4);
  CHECK(mma.constraints.size() == 14);
  CHECK(mma.text == "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                    "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};");
  CHECK_FALSE(mma.clobbersMemory);
  // A wgmma of n = 64 has 32 accumulators, read and written only when it accumulates.
  InlinePtx product = wgmmaMmaAsync(kir::WgmmaKind::BF16_K16, 64, true, false, true);
  CHECK(product.outputCount() == 32);
  CHECK(product.constraints[0] == "+f");
  CHECK(product.text.find("kiln_p, 1, 1, 1, 0;") != std::string::npos);
  CHECK(wgmmaMmaAsync(kir::WgmmaKind::BF16_K16, 64, false, false, false).constraints[0] == "=f");
  // Only 16-bit operands take the transpose immediates.
  CHECK(wgmmaMmaAsync(kir::WgmmaKind::TF32_K8, 64, false, false, true)
            .text.find("kiln_p, 1, 1;") != std::string::npos);
  CHECK(cpAsync(16, true).text == "cp.async.cg.shared.global [%0], [%1], 16, %2;");
  CHECK(cpAsync(8, false).text == "cp.async.ca.shared.global [%0], [%1], 8;");
  CHECK(bulkTensorLoad(2).text.find("[%1, {%2, %3}], [%4]") != std::string::npos);
}

TEST_CASE("the architecture check names the instruction and the target", "[ptx]") {
  auto target = [](std::string_view arch) { return gpuTargetNamed(arch).value(); };
  auto refused = [&](const InlinePtx &instruction, std::string_view arch) {
    auto result = requireInstruction(target(arch), instruction, "the product");
    REQUIRE_FALSE(result);
    CHECK(result.error().code() == ErrorCode::Unsupported);
    return result.error().message();
  };
  CHECK(requireInstruction(target("sm_80"), cpAsync(16, false), "a copy"));
  CHECK(requireInstruction(target("sm_90"), mbarrier(kir::MbarrierOp::Init), "a barrier"));
  CHECK(requireInstruction(target("sm_89"), mmaSync(kir::MmaKind::E4M3_M16N8K32), "e4m3"));
  CHECK_THAT(refused(mmaSync(kir::MmaKind::E4M3_M16N8K32), "sm_86"),
             Catch::Matchers::Equals("the product (PTX mma.sync.aligned.m16n8k32.row.col.f32.e4m3."
                                     "e4m3.f32) needs sm_89 or newer; the target is sm_86"));
  CHECK_THAT(refused(bulkTensorLoad(2), "sm_80"), Catch::Matchers::Contains("needs sm_90"));
  // wgmma exists only on sm_90a: neither an older nor the portable sm_90 has it.
  InlinePtx product = wgmmaMmaAsync(kir::WgmmaKind::BF16_K16, 64, false, false, true);
  CHECK(requireInstruction(target("sm_90a"), product, "the product"));
  for (std::string_view arch : {"sm_80", "sm_90"})
    CHECK_THAT(refused(product, arch), Catch::Matchers::Contains("needs sm_90a"));
  CHECK_THAT(refused(wgmmaSync(kir::WgmmaSyncOp::Fence, 0), "sm_90"),
             Catch::Matchers::Contains("PTX wgmma.fence.sync.aligned"));
}
