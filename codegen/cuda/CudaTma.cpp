// Bulk tensor copies (cp.async.bulk.tensor) and mbarriers in CUDA C, as the inline PTX of
// codegen/PtxInstructions.h (sm_90 and later). Barriers and destinations are named by their
// 32-bit shared addresses; a copy names its tensor map by the generic address of its
// __grid_constant__ parameter.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/TensorMap.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::codegen::cuda {

Expected<std::string> CudaEmitter::sharedAddress(const kir::BufferPtr &buffer,
                                                 const kir::ExprPtr &index,
                                                 std::string_view what) {
  auto found = bufferNames_.find(buffer.get());
  KILN_CHECK(found != bufferNames_.end() && buffer->scope == kir::MemScope::Shared,
             fmt::format("{}: the verifier admits shared buffers in scope only", what));
  KILN_TRY(CCode at, emitScalar(index));
  return fmt::format("(unsigned)__cvta_generic_to_shared(&{}[{}])", found->second, at.text);
}

Expected<void> CudaEmitter::emitMbarrier(const kir::Mbarrier &barrier) {
  InlinePtx instruction = mbarrier(barrier.op);
  std::string name = fmt::format("mbarrier_{} on {}", kir::mbarrierOpName(barrier.op),
                                 barrier.barriers->name);
  KILN_TRY_VOID(require(instruction, name));
  KILN_TRY(std::string address, sharedAddress(barrier.barriers, barrier.index, name));
  switch (barrier.op) {
  case kir::MbarrierOp::Init:
  case kir::MbarrierOp::ArriveExpectTx:
    emitAsm(instruction, {address, std::to_string(barrier.count)});
    return {};
  case kir::MbarrierOp::Arrive:
    emitAsm(instruction, {address});
    return {};
  case kir::MbarrierOp::Wait: {
    KILN_TRY(CCode parity, emitScalar(barrier.parity));
    emitAsm(instruction, {address, fmt::format("(unsigned)({})", parity.text)});
    return {};
  }
  }
  KILN_UNREACHABLE("mbarrier op");
}

Expected<void> CudaEmitter::emitTmaLoad(const kir::TmaLoad &copy) {
  const int rank = static_cast<int>(copy.coords.size());
  InlinePtx instruction = bulkTensorLoad(rank);
  std::string name = fmt::format("bulk tensor copy through {}", copy.map->name);
  KILN_TRY_VOID(require(instruction, name));
  auto map = tensorMapNames_.find(copy.map.get());
  KILN_CHECK(map != tensorMapNames_.end(), "the verifier admits tensor maps of parameters only");
  KILN_TRY(std::string destination, sharedAddress(copy.destination, copy.destinationIndex, name));
  KILN_TRY(std::string barrier, sharedAddress(copy.barriers, copy.barrierIndex, name));
  std::vector<std::string> operands{
      destination, fmt::format("reinterpret_cast<unsigned long long>(&{})", map->second)};
  for (const kir::ExprPtr &coord : copy.coords) {
    KILN_TRY(CCode value, emitScalar(coord));
    operands.push_back(fmt::format("(int)({})", value.text));
  }
  operands.push_back(barrier);
  emitAsm(instruction, operands);
  return {};
}

} // namespace kiln::codegen::cuda
