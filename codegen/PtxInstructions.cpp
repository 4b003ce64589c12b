#include "codegen/PtxInstructions.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::codegen {
namespace {

/// "{%first, %first+1, ...}": a vector of `count` operands.
std::string operandVector(int first, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i)
    names.push_back(fmt::format("%{}", first + i));
  return fmt::format("{{{}}}", fmt::join(names, ", "));
}

InlinePtx instruction(std::string mnemonic, int minSm, bool archSpecific = false) {
  InlinePtx made;
  made.mnemonic = std::move(mnemonic);
  made.minSm = minSm;
  made.archSpecific = archSpecific;
  return made;
}

void addConstraints(InlinePtx &instruction, std::string_view constraint, int count) {
  for (int i = 0; i < count; ++i)
    instruction.constraints.emplace_back(constraint);
}

/// Packed 32-bit words of `elements` elements of `dtype`.
int wordsOf(int elements, DType dtype) {
  return elements * static_cast<int>(dtypeByteSize(dtype)) / 4;
}

} // namespace

int InlinePtx::outputCount() const {
  int outputs = 0;
  for (const std::string &constraint : constraints)
    outputs += constraint[0] == '=' || constraint[0] == '+';
  return outputs;
}

Expected<void> requireInstruction(const GpuTarget &target, const InlinePtx &instruction,
                                  std::string_view what) {
  if (instruction.archSpecific) {
    if (target.sm == instruction.minSm && target.archSpecific)
      return {};
    return makeError(ErrorCode::Unsupported,
                fmt::format("{} (PTX {}) needs sm_{}a (it exists only there); the target is {}",
                            what, instruction.mnemonic, instruction.minSm, target.archName()));
  }
  if (target.sm >= instruction.minSm)
    return {};
  return makeError(ErrorCode::Unsupported,
              fmt::format("{} (PTX {}) needs sm_{} or newer; the target is {}", what,
                          instruction.mnemonic, instruction.minSm, target.archName()));
}

InlinePtx mmaSync(kir::MmaKind kind) {
  const kir::MmaShapeInfo &info = kir::mmaShapeInfo(kind);
  int d = info.cElements, a = wordsOf(info.aElements, info.operandDtype),
      b = wordsOf(info.bElements, info.operandDtype), c = info.cElements;
  InlinePtx mma = instruction(fmt::format("mma.sync.aligned.{}", info.ptxName), info.minSm);
  mma.clobbersMemory = false;
  mma.text = fmt::format("{} {}, {}, {}, {};", mma.mnemonic, operandVector(0, d),
                         operandVector(d, a), operandVector(d + a, b),
                         operandVector(d + a + b, c));
  addConstraints(mma, "=f", d);
  addConstraints(mma, "r", a + b);
  addConstraints(mma, "f", c);
  return mma;
}

InlinePtx ldMatrix(int matrices, bool transpose) {
  InlinePtx load = instruction(fmt::format("ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16", matrices,
                             transpose ? ".trans" : ""),
                 75);
  load.text = fmt::format("{} {}, [%{}];", load.mnemonic, operandVector(0, matrices), matrices);
  addConstraints(load, "=r", matrices);
  load.constraints.emplace_back("r");
  return load;
}

InlinePtx cpAsync(int bytes, bool sourceBytes) {
  // cp.async.cg (bypassing L1) exists only for 16 bytes.
  InlinePtx copy = instruction(fmt::format("cp.async.{}.shared.global", bytes == 16 ? "cg" : "ca"), 80);
  copy.text = fmt::format("{} [%0], [%1], {}{};", copy.mnemonic, bytes, sourceBytes ? ", %2" : "");
  copy.constraints = {"r", "l"};
  if (sourceBytes)
    copy.constraints.emplace_back("r");
  return copy;
}

InlinePtx cpAsyncCommit() {
  InlinePtx commit = instruction("cp.async.commit_group", 80);
  commit.text = "cp.async.commit_group;";
  return commit;
}

InlinePtx cpAsyncWait(int pendingGroups) {
  InlinePtx wait = instruction("cp.async.wait_group", 80);
  wait.text = fmt::format("cp.async.wait_group {};", pendingGroups);
  return wait;
}

InlinePtx wgmmaMmaAsync(kir::WgmmaKind kind, int n, bool aMnMajor, bool bMnMajor,
                        bool accumulate) {
  InlinePtx product = instruction("wgmma.mma_async.sync.aligned." + kir::wgmmaPtxShape(kind, n), 90, true);
  const int d = n / 2;
  // The transpose immediates exist only for 16-bit operands.
  std::string transposes;
  if (kir::wgmmaShapeInfo(kind).mnMajorAllowed)
    transposes = fmt::format(", {}, {}", aMnMajor ? 1 : 0, bMnMajor ? 1 : 0);
  // The scale-d operand is a predicate: a register flag set by the last operand.
  product.text = fmt::format(
      "{{\n.reg .pred kiln_p;\nsetp.ne.b32 kiln_p, %{}, 0;\n{} {}, %{}, %{}, kiln_p, 1, 1{};\n}}",
      d + 2, product.mnemonic, operandVector(0, d), d, d + 1, transposes);
  addConstraints(product, accumulate ? "+f" : "=f", d);
  product.constraints.insert(product.constraints.end(), {"l", "l", "r"});
  return product;
}

InlinePtx wgmmaSync(kir::WgmmaSyncOp op, int pendingGroups) {
  InlinePtx sync = instruction("", 90, true);
  switch (op) {
  case kir::WgmmaSyncOp::Fence: sync.mnemonic = "wgmma.fence.sync.aligned"; break;
  case kir::WgmmaSyncOp::SharedFence: sync.mnemonic = "fence.proxy.async.shared::cta"; break;
  case kir::WgmmaSyncOp::Commit: sync.mnemonic = "wgmma.commit_group.sync.aligned"; break;
  case kir::WgmmaSyncOp::Wait:
    sync.mnemonic = "wgmma.wait_group.sync.aligned";
    sync.text = fmt::format("{} {};", sync.mnemonic, pendingGroups);
    return sync;
  }
  sync.text = sync.mnemonic + ";";
  return sync;
}

InlinePtx mbarrier(kir::MbarrierOp op) {
  InlinePtx barrier = instruction("", 90);
  switch (op) {
  case kir::MbarrierOp::Init:
    // The fence makes the init visible to the bulk copies' async proxy.
    barrier.mnemonic = "mbarrier.init.shared::cta.b64";
    barrier.text = "mbarrier.init.shared::cta.b64 [%0], %1;\nfence.mbarrier_init.release.cluster;";
    barrier.constraints = {"r", "r"};
    break;
  case kir::MbarrierOp::Arrive:
    barrier.mnemonic = "mbarrier.arrive.shared::cta.b64";
    barrier.text =
        "{\n.reg .b64 kiln_state;\nmbarrier.arrive.shared::cta.b64 kiln_state, [%0];\n}";
    barrier.constraints = {"r"};
    break;
  case kir::MbarrierOp::ArriveExpectTx:
    barrier.mnemonic = "mbarrier.arrive.expect_tx.shared::cta.b64";
    barrier.text = "{\n.reg .b64 kiln_state;\nmbarrier.arrive.expect_tx.shared::cta.b64 "
                   "kiln_state, [%0], %1;\n}";
    barrier.constraints = {"r", "r"};
    break;
  case kir::MbarrierOp::Wait:
    // try_wait gives up after a time the hardware picks: the loop waits on.
    barrier.mnemonic = "mbarrier.try_wait.parity.shared::cta.b64";
    barrier.text = "{\n.reg .pred kiln_done;\nkiln_wait:\nmbarrier.try_wait.parity.shared::cta."
                   "b64 kiln_done, [%0], %1;\n@!kiln_done bra kiln_wait;\n}";
    barrier.constraints = {"r", "r"};
    break;
  }
  return barrier;
}

InlinePtx bulkTensorLoad(int rank) {
  InlinePtx copy = instruction(fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::"
                             "complete_tx::bytes",
                             rank),
                 90);
  copy.text = fmt::format("{} [%0], [%1, {}], [%{}];", copy.mnemonic, operandVector(2, rank),
                          rank + 2);
  copy.constraints = {"r", "l"};
  addConstraints(copy, "r", rank + 1);
  return copy;
}

} // namespace kiln::codegen
