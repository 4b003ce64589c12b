// Bulk tensor copies (cp.async.bulk.tensor) and mbarriers in CUDA C, as inline PTX for sm_90
// and later. Barriers and destinations are named by their 32-bit shared addresses; a copy
// names its tensor map by the generic address of its __grid_constant__ parameter. A wait
// spins on mbarrier.try_wait.parity inside its own brace scope, whose label is local to it.
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
  std::string name = fmt::format("mbarrier_{} on {}", kir::mbarrierOpName(barrier.op),
                                 barrier.barriers->name);
  KILN_TRY_VOID(requireSm(90, name));
  KILN_TRY(std::string address, sharedAddress(barrier.barriers, barrier.index, name));
  switch (barrier.op) {
  case kir::MbarrierOp::Init:
    // The fence makes the init visible to the copies' async proxy.
    line(fmt::format("asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n"
                     "fence.mbarrier_init.release.cluster;\" :: \"r\"({}), \"r\"({}) : "
                     "\"memory\");",
                     address, barrier.count));
    return {};
  case kir::MbarrierOp::Arrive:
    line(fmt::format("asm volatile(\"{{\\n.reg .b64 kiln_state;\\n"
                     "mbarrier.arrive.shared::cta.b64 kiln_state, [%0];\\n}}\" :: \"r\"({}) : "
                     "\"memory\");",
                     address));
    return {};
  case kir::MbarrierOp::ArriveExpectTx:
    line(fmt::format("asm volatile(\"{{\\n.reg .b64 kiln_state;\\n"
                     "mbarrier.arrive.expect_tx.shared::cta.b64 kiln_state, [%0], %1;\\n}}\" :: "
                     "\"r\"({}), \"r\"({}) : \"memory\");",
                     address, barrier.count));
    return {};
  case kir::MbarrierOp::Wait: {
    KILN_TRY(CCode parity, emitScalar(barrier.parity));
    line(fmt::format("asm volatile(\"{{\\n.reg .pred kiln_done;\\nkiln_wait:\\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 kiln_done, [%0], %1;\\n"
                     "@!kiln_done bra kiln_wait;\\n}}\" :: \"r\"({}), \"r\"((unsigned)({})) : "
                     "\"memory\");",
                     address, parity.text));
    return {};
  }
  }
  KILN_UNREACHABLE("mbarrier op");
}

Expected<void> CudaEmitter::emitTmaLoad(const kir::TmaLoad &copy) {
  std::string name = fmt::format("bulk tensor copy through {}", copy.map->name);
  KILN_TRY_VOID(requireSm(90, name + " (cp.async.bulk.tensor)"));
  auto map = tensorMapNames_.find(copy.map.get());
  KILN_CHECK(map != tensorMapNames_.end(), "the verifier admits tensor maps of parameters only");
  KILN_TRY(std::string destination, sharedAddress(copy.destination, copy.destinationIndex, name));
  KILN_TRY(std::string barrier, sharedAddress(copy.barriers, copy.barrierIndex, name));
  const int rank = static_cast<int>(copy.coords.size());
  std::vector<std::string> coordOperands, coordValues;
  for (int d = 0; d < rank; ++d) {
    KILN_TRY(CCode coord, emitScalar(copy.coords[static_cast<size_t>(d)]));
    coordOperands.push_back(fmt::format("%{}", d + 2));
    coordValues.push_back(fmt::format("\"r\"((int)({}))", coord.text));
  }
  line(fmt::format("asm volatile(\"cp.async.bulk.tensor.{}d.shared::cluster.global.tile."
                   "mbarrier::complete_tx::bytes [%0], [%1, {{{}}}], [%{}];\" :: \"r\"({}), "
                   "\"l\"(reinterpret_cast<unsigned long long>(&{})), {}, \"r\"({}) : \"memory\");",
                   rank, fmt::join(coordOperands, ", "), rank + 2, destination, map->second,
                   fmt::join(coordValues, ", "), barrier));
  return {};
}

} // namespace kiln::codegen::cuda
