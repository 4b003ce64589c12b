// Warpgroup products (wgmma.mma_async) and their ordering statements in CUDA C, as inline
// PTX for sm_90a. Operands are matrix descriptors built from the shared address of each
// operand's first element; the accumulators are "+f" operands, and every wait fences them
// again so that no read of an accumulator moves above the wait that completes it.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kiln::codegen::cuda {

Expected<void> CudaEmitter::requireWgmma(std::string_view what) const {
  if (target_.sm == 90 && target_.archSpecific)
    return {};
  return fail(ErrorCode::Unsupported,
              fmt::format("{} needs sm_90a (wgmma exists only there); the target is {}", what,
                          target_.archName()));
}

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
  std::string shape = kir::wgmmaPtxShape(product.wgmmaKind, product.n);
  std::string name = "wgmma." + shape;
  KILN_TRY_VOID(requireWgmma(name));
  KILN_TRY(std::vector<std::string> d,
           fragmentElements(product.d, DType::F32, product.n / 2, name + " d"));
  KILN_TRY(std::string aDescriptor, wgmmaDescriptor(product.a, name + " operand a"));
  KILN_TRY(std::string bDescriptor, wgmmaDescriptor(product.b, name + " operand b"));
  if (std::ranges::find(wgmmaAccumulators_, product.d.buffer.get()) == wgmmaAccumulators_.end())
    wgmmaAccumulators_.push_back(product.d.buffer.get());
  int nd = static_cast<int>(d.size());
  std::vector<std::string> dNames;
  for (int i = 0; i < nd; ++i)
    dNames.push_back(fmt::format("%{}", i));
  // The transpose immediates exist only for 16-bit operands.
  std::string transposes;
  if (kir::wgmmaShapeInfo(product.wgmmaKind).mnMajorAllowed)
    transposes = fmt::format(", {}, {}", product.a.mnMajor ? 1 : 0, product.b.mnMajor ? 1 : 0);
  line(fmt::format("{{ // {}", name));
  ++indent_;
  line(fmt::format("const unsigned long long kiln_da = {};", aDescriptor));
  line(fmt::format("const unsigned long long kiln_db = {};", bDescriptor));
  line(fmt::format("asm volatile(\"{{\\n.reg .pred kiln_p;\\nsetp.ne.b32 kiln_p, %{}, 0;\\n"
                   "wgmma.mma_async.sync.aligned.{} {{{}}}, %{}, %{}, kiln_p, 1, 1{};\\n}}\\n\"",
                   nd + 2, shape, fmt::join(dNames, ", "), nd, nd + 1, transposes));
  std::vector<std::string> outputs;
  for (const std::string &element : d)
    outputs.push_back(fmt::format("\"{}\"({})", product.accumulate ? "+f" : "=f", element));
  line(fmt::format("             : {}", fmt::join(outputs, ", ")));
  line(fmt::format("             : \"l\"(kiln_da), \"l\"(kiln_db), \"r\"({}) : \"memory\");",
                   product.accumulate ? 1 : 0));
  --indent_;
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitWgmmaSync(const kir::WgmmaSync &sync) {
  std::string name = fmt::format("wgmma {}", kir::wgmmaSyncOpName(sync.op));
  KILN_TRY_VOID(requireWgmma(name));
  switch (sync.op) {
  case kir::WgmmaSyncOp::Fence:
    line("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
    return {};
  case kir::WgmmaSyncOp::SharedFence:
    line("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
    return {};
  case kir::WgmmaSyncOp::Commit:
    line("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
    return {};
  case kir::WgmmaSyncOp::Wait: break;
  }
  line(fmt::format("asm volatile(\"wgmma.wait_group.sync.aligned {};\" ::: \"memory\");",
                   sync.pendingGroups));
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
