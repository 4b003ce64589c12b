// Warpgroup products (wgmma): issued with their operand elements resolved through the
// descriptors, run when a wgmma wait retires their group, with the fences they need.
#include "runtime/sim/SimtMachine.h"

#include "ir/kernel/WgmmaLayout.h"
#include "runtime/sim/SimTensorCore.h"

namespace kiln::sim {

using namespace kiln::kir;

/// Issues the product of each warpgroup of `a`: the operands' starts are read now (the same
/// for the whole warpgroup); the operands and accumulators when a wait retires its group.
bool SimtMachine::wgmma(const SimStmt &node, Active a) {
  const Wgmma &product = *node.wgmma;
  const std::string what = fmt::format("wgmma.{}", wgmmaPtxShape(product.wgmmaKind, product.n));
  if (!checkWholeGroups(a, what, kWarpgroupThreads, "warpgroup"))
    return false;
  if (!memoryOf(node.buffer) || !memoryOf(node.source) || !memoryOf(node.fragments[0].buffer) ||
      !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
    return false;
  const Scalar *aStart = column(node.exprs[0]), *bStart = column(node.exprs[1]);
  for (int32_t i = 0; i < a.count; i += kWarpgroupThreads) {
    const int32_t base = a.ids[i];
    for (int32_t t = base; t < base + kWarpgroupThreads; ++t)
      if (aStart[t].i != aStart[base].i || bStart[t].i != bStart[base].i)
        return raise(fmt::format("{} {} names operands other than thread {}'s (a warpgroup's "
                                 "product reads one pair of matrices)",
                                 what, byThread(t), threadText(base)));
    PendingWgmma pending;
    pending.product = node.wgmma.get();
    pending.aBuffer = node.buffer;
    pending.bBuffer = node.source;
    pending.dBuffer = node.fragments[0].buffer;
    const int k = wgmmaShapeInfo(product.wgmmaKind).k;
    if (!wgmmaOperandElements(node.buffer, product.a, aStart[base].i, kWgmmaM, k,
                              what + " operand a", pending.aElements) ||
        !wgmmaOperandElements(node.source, product.b, bStart[base].i, product.n, k,
                              what + " operand b", pending.bElements))
      return false;
    if (!checkWgmmaFences(node, pending, base, what))
      return false;
    for (auto [buffer, elements] : {std::pair{node.buffer, &pending.aElements},
                                    std::pair{node.source, &pending.bElements}}) {
      const SimMemory &memory = memories_[static_cast<size_t>(buffer)];
      for (int64_t element : *elements)
        if (!memory.inFlight.empty() && memory.inFlight[static_cast<size_t>(element)] != 0)
          return inFlightError(memory, element, static_cast<size_t>(base), what + " read");
    }
    for (auto [buffer, elements] : {std::pair{node.buffer, &pending.aElements},
                                    std::pair{node.source, &pending.bElements}}) {
      SimMemory &memory = memories_[static_cast<size_t>(buffer)];
      if (memory.wgmmaReaders.empty())
        memory.wgmmaReaders.assign(static_cast<size_t>(memory.size), 0);
      for (int64_t element : *elements)
        ++memory.wgmmaReaders[static_cast<size_t>(element)];
    }
    wgmmas_.issue(base / kWarpgroupThreads, std::move(pending));
  }
  return true;
}

bool SimtMachine::wgmmaSync(const SimStmt &node, Active a) {
  const auto op = static_cast<WgmmaSyncOp>(node.op);
  const std::string what = fmt::format("wgmma {}", wgmmaSyncOpName(op));
  if (!checkWholeGroups(a, what, kWarpgroupThreads, "warpgroup"))
    return false;
  for (int32_t i = 0; i < a.count; ++i) {
    const size_t t = static_cast<size_t>(a.ids[i]);
    sharedFences_[t] += op == WgmmaSyncOp::SharedFence;
    accumulatorFences_[t] += op == WgmmaSyncOp::Fence;
  }
  for (int32_t i = 0; i < a.count; i += kWarpgroupThreads) {
    const int32_t group = a.ids[i] / kWarpgroupThreads;
    if (op == WgmmaSyncOp::Commit)
      wgmmas_.commit(group);
    else if (op == WgmmaSyncOp::Wait &&
             !wgmmas_.retire(group, node.pending, [&](const PendingWgmma &product) {
               return runWgmma(group, product);
             }))
      return false;
    // Fence and SharedFence are checked where a product is issued (checkWgmmaFences).
  }
  return true;
}

/// The elements of `buffer` that operand `matrix` of a product starting at element `start`
/// reads, resolved through its descriptor: out[mn * k + kk] for the `mnCount` x `k` ones.
bool SimtMachine::wgmmaOperandElements(int buffer, const SharedMatrix &matrix, int64_t start,
                                       int mnCount, int k, std::string_view what,
                                       std::vector<int64_t> &out) {
  SimMemory *memory = memoryOf(buffer);
  if (!memory)
    return false;
  const int64_t bytes = memory->elementBytes;
  const int64_t base = launch_.sharedOffset(memory->buffer);
  const int64_t address = base + start * bytes;
  if (base < 0 || base % kWgmmaAtomBytes != 0)
    return raise(fmt::format("{} reads shared {}, which does not start at a 1024-byte boundary "
                             "of the shared layout",
                             what, memory->buffer->name));
  if (start < 0 || start >= memory->size || address % 16 != 0 || address >= (1 << 18))
    return raise(fmt::format("{} starts at {}[{}], which is outside it or not 16-byte aligned",
                             what, memory->buffer->name, start));
  WgmmaDescriptor descriptor = decodeWgmmaDescriptor(encodeWgmmaDescriptor(
      {static_cast<uint32_t>(address), static_cast<uint32_t>(matrix.leadingBytes),
       static_cast<uint32_t>(matrix.strideBytes), 0, 1}));
  out.resize(static_cast<size_t>(mnCount) * static_cast<size_t>(k));
  for (int mn = 0; mn < mnCount; ++mn)
    for (int kk = 0; kk < k; ++kk) {
      int64_t byte = int64_t(wgmmaOperandAddress(descriptor, matrix.mnMajor,
                                                 static_cast<int>(bytes), mn, kk)) - base;
      int64_t element = byte / bytes;
      if (byte < 0 || element >= memory->size)
        return raise(fmt::format("{} reads element ({}, {}) at byte {} of shared {}, outside its "
                                 "{} elements",
                                 what, mn, kk, byte, memory->buffer->name, memory->size));
      out[static_cast<size_t>(mn * k + kk)] = element;
    }
  return true;
}

/// Reads a retired product's operand elements (and forgets them as read by a product).
bool SimtMachine::readWgmmaOperand(int buffer, const std::vector<int64_t> &elements,
                                   int32_t firstThread, std::string_view what,
                                   std::vector<double> &out) {
  SimMemory *memory = memoryOf(buffer);
  if (!memory)
    return false;
  out.resize(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    const int64_t element = elements[i];
    --memory->wgmmaReaders[static_cast<size_t>(element)];
    if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
      return inFlightError(*memory, element, static_cast<size_t>(firstThread), what);
    if (!memory->written[static_cast<size_t>(element)])
      return raise(fmt::format("{} read of shared {}[{}], which no thread has written, by the "
                               "warpgroup of thread {} of block {}",
                               what, memory->buffer->name, element, threadText(firstThread),
                               blockText()));
    out[i] = loadElement(memory->data + element * memory->elementBytes, memory->buffer->dtype).f;
    ++stats_.sharedLoads;
  }
  return true;
}

/// A product reads its shared operands through the async proxy and its accumulators as the
/// registers stood at the last wgmma_fence: every operand element a thread wrote needs that
/// thread's wgmma_shared_fence since, and every accumulator written by a store a wgmma_fence
/// of its thread since.
bool SimtMachine::checkWgmmaFences(const SimStmt &node, const PendingWgmma &pending, int32_t first,
                                   const std::string &what) {
  for (auto [buffer, elements] : {std::pair{node.buffer, &pending.aElements},
                                  std::pair{node.source, &pending.bElements}}) {
    const SimMemory &memory = memories_[static_cast<size_t>(buffer)];
    for (int64_t element : *elements) {
      const int32_t writer = memory.writer[static_cast<size_t>(element)];
      if (writer >= 0 && memory.fencesAtWrite[static_cast<size_t>(element)] ==
                             sharedFences_[static_cast<size_t>(writer)])
        return raise(fmt::format("{} of the warpgroup of thread {} of block {} reads shared "
                                 "{}[{}], which thread {} wrote with no wgmma_shared_fence "
                                 "(fence.proxy.async) after it",
                                 what, threadText(first), blockText(), memory.buffer->name,
                                 element, threadText(writer)));
    }
  }
  const SimMemory &d = memories_[static_cast<size_t>(node.fragments[0].buffer)];
  for (int32_t t = first; t < first + kWarpgroupThreads; ++t)
    for (int e = 0; e < node.wgmma->n / 2; ++e) {
      int64_t element = elementOf(d, static_cast<size_t>(t), node.fragments[0].offset + e);
      if (d.fencesAtWrite[static_cast<size_t>(element)] ==
          accumulatorFences_[static_cast<size_t>(t)])
        return raise(fmt::format("{} {} accumulates into register {}[{}], stored to with no "
                                 "wgmma_fence after it",
                                 what, byThread(t), d.buffer->name,
                                 node.fragments[0].offset + e));
    }
  return true;
}

/// Runs a retired product of warpgroup `group`: D = A x B (+ D) into its threads' registers.
bool SimtMachine::runWgmma(int32_t group, const PendingWgmma &pending) {
  const Wgmma &product = *pending.product;
  const int n = product.n, k = wgmmaShapeInfo(product.wgmmaKind).k;
  const std::string what = fmt::format("wgmma.{}", wgmmaPtxShape(product.wgmmaKind, n));
  const int32_t first = group * kWarpgroupThreads;
  std::vector<double> aValues, bTransposed;
  if (!readWgmmaOperand(pending.aBuffer, pending.aElements, first, what + " operand a",
                        aValues) ||
      !readWgmmaOperand(pending.bBuffer, pending.bElements, first, what + " operand b",
                        bTransposed))
    return false;
  std::vector<double> bValues(static_cast<size_t>(k) * static_cast<size_t>(n));
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p)
      bValues[static_cast<size_t>(p * n + j)] = bTransposed[static_cast<size_t>(j * k + p)];
  SimMemory *d = memoryOf(pending.dBuffer);
  if (!d)
    return false;
  std::vector<float> dValues(static_cast<size_t>(kWgmmaM) * static_cast<size_t>(n), 0.0f);
  auto slot = [&](int thread, int e) {
    MatrixPosition at = wgmmaAccumulatorPosition(thread, e);
    return static_cast<size_t>(at.row * n + at.col);
  };
  for (int thread = 0; thread < kWarpgroupThreads && product.accumulate; ++thread)
    for (int e = 0; e < n / 2; ++e) {
      const size_t t = static_cast<size_t>(first + thread);
      int64_t element = elementOf(*d, t, product.d.offset + e);
      if (!d->written[static_cast<size_t>(element)])
        return raise(fmt::format("{} accumulates into register {}[{}], which no thread has "
                                 "written, {}",
                                 what, d->buffer->name, product.d.offset + e,
                                 byThread(static_cast<int64_t>(t))));
      dValues[slot(thread, e)] =
          static_cast<float>(loadElement(d->data + element * d->elementBytes, DType::F32).f);
    }
  warpgroupMma(n, k, aValues, bValues, dValues, product.accumulate);
  for (int thread = 0; thread < kWarpgroupThreads; ++thread)
    for (int e = 0; e < n / 2; ++e) {
      const size_t t = static_cast<size_t>(first + thread);
      int64_t element = elementOf(*d, t, product.d.offset + e);
      d->written[static_cast<size_t>(element)] = 1;
      storeElement(d->data + element * d->elementBytes, DType::F32,
                   Scalar::ofFloat(dValues[slot(thread, e)]));
    }
  ++stats_.mmas;
  return true;
}

/// At the end of a block every product must have been retired by a wait.
bool SimtMachine::checkWgmmasRetired() {
  int32_t group = 0;
  const PendingWgmma *product = wgmmas_.firstInFlight(group);
  if (!product)
    return true;
  return raise(fmt::format("wgmma.{} of warpgroup {} of block {} was never waited for: {} "
                           "before the block ended",
                           wgmmaPtxShape(product->product->wgmmaKind, product->product->n),
                           group, blockText(),
                           wgmmas_.uncommitted(group, *product)
                               ? "it was not committed (wgmma_commit) and retired (wgmma_wait)"
                               : "no wgmma wait retired its group"));
}

} // namespace kiln::sim
