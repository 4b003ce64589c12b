// Warpgroup products (wgmma.mma_async) and their ordering statements in CUDA C, as the inline
// PTX of codegen/PtxInstructions.h (sm_90a). Operands are matrix descriptors built from the
// shared address of each operand's first element; the accumulators are "+f" operands, and
// every wait fences them again so that no read of an accumulator moves above the wait that
// completes it.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kiln::codegen::cuda {

Expected<std::string> CudaEmitter::wgmmaDescriptor(const kir::SharedMatrix &matrix,
                                                   std::string_view what) {
  auto found = bufferNames_.find(matrix.buffer.get());
  KILN_CHECK(found != bufferNames_.end(),
             fmt::format("{}: the verifier admits operands in scope only", what));
  KILN_TRY(CCode start, emitScalar(matrix.start));
  // The strides and the swizzle are constants; only the start address varies.
  uint64_t fixed = kir::encodeWgmmaDescriptor({0, static_cast<uint32_t>(matrix.leadingBytes),
                                               static_cast<uint32_t>(matrix.strideBytes), 0, 1});
  return fmt::format("({:#x}ull | (unsigned long long)(((unsigned)__cvta_generic_to_shared("
                     "&{}[{}]) & 0x3FFFFu) >> 4))",
                     fixed, found->second, start.text);
}

Expected<void> CudaEmitter::emitWgmma(const kir::Wgmma &product) {
  InlinePtx instruction = wgmmaMmaAsync(product.wgmmaKind, product.n, product.a.mnMajor,
                                        product.b.mnMajor, product.accumulate);
  std::string name = "wgmma." + kir::wgmmaPtxShape(product.wgmmaKind, product.n);
  KILN_TRY_VOID(require(instruction, name));
  KILN_TRY(std::vector<std::string> operands,
           fragmentElements(product.d, DType::F32, product.n / 2, name + " d"));
  KILN_TRY(std::string aDescriptor, wgmmaDescriptor(product.a, name + " operand a"));
  KILN_TRY(std::string bDescriptor, wgmmaDescriptor(product.b, name + " operand b"));
  if (std::ranges::find(wgmmaAccumulators_, product.d.buffer.get()) == wgmmaAccumulators_.end())
    wgmmaAccumulators_.push_back(product.d.buffer.get());
  line(fmt::format("{{ // {}", name));
  ++indent_;
  line(fmt::format("const unsigned long long kiln_da = {};", aDescriptor));
  line(fmt::format("const unsigned long long kiln_db = {};", bDescriptor));
  operands.insert(operands.end(), {"kiln_da", "kiln_db", product.accumulate ? "1" : "0"});
  emitAsm(instruction, operands);
  --indent_;
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitWgmmaSync(const kir::WgmmaSync &sync) {
  InlinePtx instruction = wgmmaSync(sync.op, sync.pendingGroups);
  KILN_TRY_VOID(
      require(instruction, fmt::format("wgmma {}", kir::wgmmaSyncOpName(sync.op))));
  emitAsm(instruction, {});
  if (sync.op != kir::WgmmaSyncOp::Wait)
    return {};
  // The accumulators change at the wait, not at the product: an empty asm that "rewrites"
  // each one keeps their reads below it.
  for (const kir::Buffer *buffer : wgmmaAccumulators_) {
    auto found = bufferNames_.find(buffer);
    if (found == bufferNames_.end())
      continue; // out of scope here: nothing below can read it
    std::vector<std::string> operands;
    for (int64_t i = 0; i < buffer->size; ++i)
      operands.push_back(fmt::format("\"+f\"({}[{}])", found->second, i));
    line(fmt::format("asm volatile(\"\" : {} :: \"memory\");", fmt::join(operands, ", ")));
  }
  return {};
}

} // namespace kiln::codegen::cuda
