// The tensor-core products of a warp: mma.sync and ldmatrix.
#include "runtime/sim/SimtMachine.h"

#include "ir/kernel/MmaLayout.h"
#include "runtime/sim/SimTensorCore.h"

#include <array>
#include <cstring>

namespace kiln::sim {

using namespace kiln::kir;

/// Reads `count` values of fragment `f` for the 32 lanes of the warp that
/// starts at thread `warpBase`, lane-major into `out`.
bool SimtMachine::readFragment(const SimFragment &f, int count, int32_t warpBase,
                               std::string_view what, std::string_view operand,
                               std::span<double> out) {
  SimMemory *memory = memoryOf(f.buffer);
  if (!memory)
    return false;
  const DType dtype = memory->buffer->dtype;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    size_t t = static_cast<size_t>(warpBase + lane);
    for (int e = 0; e < count; ++e) {
      int64_t element = elementOf(*memory, t, f.offset + e);
      if (!memory->written[static_cast<size_t>(element)])
        return raise(fmt::format("read of register {}[{}], which no thread has written, {} "
                                 "({} operand {})",
                                 memory->buffer->name, f.offset + e,
                                 byThread(static_cast<int64_t>(t)), what, operand));
      out[static_cast<size_t>(lane * count + e)] =
          loadElement(memory->data + element * memory->elementBytes, dtype).f;
    }
  }
  return true;
}

bool SimtMachine::mma(const SimStmt &node, Active a) {
  const auto kind = static_cast<MmaKind>(node.op);
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  const std::string what = fmt::format("mma.{}", mmaKindName(kind));
  if (!checkWholeWarps(a, what))
    return false;
  SimMemory *d = memoryOf(node.fragments[0].buffer);
  if (!d)
    return false;
  const size_t aCount = static_cast<size_t>(kWarpSize * info.aElements);
  const size_t bCount = static_cast<size_t>(kWarpSize * info.bElements);
  const size_t cCount = static_cast<size_t>(kWarpSize * info.cElements);
  std::array<double, 16 * 32> aValues;  // the largest fragments: m16 x k32,
  std::array<double, 32 * 8> bValues;   // k32 x n8,
  std::array<double, 16 * 8> cValues;   // m16 x n8
  std::array<float, 16 * 8> cFloats, dFloats;
  KILN_CHECK(aCount <= aValues.size() && bCount <= bValues.size() && cCount <= cFloats.size(),
             "mma fragment sizes");
  for (int32_t i = 0; i < a.count; i += kWarpSize) {
    const int32_t base = a.ids[i];
    // Every operand is read before d is written: d may alias c.
    if (!readFragment(node.fragments[1], info.aElements, base, what, "a",
                      std::span(aValues).first(aCount)) ||
        !readFragment(node.fragments[2], info.bElements, base, what, "b",
                      std::span(bValues).first(bCount)) ||
        !readFragment(node.fragments[3], info.cElements, base, what, "c",
                      std::span(cValues).first(cCount)))
      return false;
    for (size_t v = 0; v < cCount; ++v)
      cFloats[v] = static_cast<float>(cValues[v]);
    warpMma(kind, std::span(aValues).first(aCount), std::span(bValues).first(bCount),
            std::span(cFloats).first(cCount), std::span(dFloats).first(cCount));
    const SimFragment &out = node.fragments[0];
    for (int lane = 0; lane < kWarpSize; ++lane)
      for (int e = 0; e < info.cElements; ++e) {
        int64_t element = elementOf(*d, static_cast<size_t>(base + lane), out.offset + e);
        d->written[static_cast<size_t>(element)] = 1;
        storeElement(d->data + element * d->elementBytes, DType::F32,
                     Scalar::ofFloat(dFloats[static_cast<size_t>(lane * info.cElements + e)]));
      }
    ++stats_.mmas;
  }
  return true;
}

bool SimtMachine::ldMatrix(const SimStmt &node, Active a) {
  const int matrices = node.op;
  const std::string what =
      fmt::format("ldmatrix.x{}{}", matrices, node.transpose ? ".trans" : "");
  if (!checkWholeWarps(a, what))
    return false;
  SimMemory *source = memoryOf(node.buffer);
  SimMemory *destination = memoryOf(node.fragments[0].buffer);
  if (!source || !destination || !eval(node.exprs[0], a))
    return false;
  const Scalar *rowIndex = column(node.exprs[0]);
  const int64_t bytes = source->elementBytes;
  const int64_t offset = node.fragments[0].offset;
  const int bytesPerElement = static_cast<int>(bytes);
  const int perMatrix = ldMatrixElementsPerMatrix(bytesPerElement);
  for (int32_t i = 0; i < a.count; i += kWarpSize) {
    const int32_t base = a.ids[i];
    // Lanes 8j .. 8j+7 address the rows of matrix j: 16 bytes, 16-byte aligned.
    for (int lane = 0; lane < 8 * matrices; ++lane) {
      size_t t = static_cast<size_t>(base + lane);
      if (!checkAccess(*source, rowIndex[t].i, 16 / bytes, nullptr, false, t, "ldmatrix row"))
        return false;
    }
    for (int lane = 0; lane < kWarpSize; ++lane) {
      const size_t t = static_cast<size_t>(base + lane);
      for (int v = 0; v < perMatrix * matrices; ++v) {
        LdMatrixElement at = ldMatrixElement(bytesPerElement, node.transpose, lane, v);
        const int64_t element =
            rowIndex[static_cast<size_t>(base + 8 * at.matrix + at.position.row)].i +
            at.position.col;
        if (!source->inFlight.empty() && source->inFlight[static_cast<size_t>(element)] != 0)
          return inFlightError(*source, element, t, what + " read");
        if (!source->written[static_cast<size_t>(element)])
          return raise(fmt::format("{} read of shared {}[{}], which no thread has written, {}",
                                   what, source->buffer->name, element,
                                   byThread(static_cast<int64_t>(t))));
        if (source->trackRaces)
          if (auto race = source->races.read(element, static_cast<int64_t>(t), epoch_))
            return raceError(*source, element, *race, t, "read");
        int64_t to = elementOf(*destination, t, offset + v);
        std::memcpy(destination->data + to * bytes, source->data + element * bytes,
                    static_cast<size_t>(bytes));
        destination->written[static_cast<size_t>(to)] = 1;
        ++stats_.sharedLoads;
      }
    }
  }
  return true;
}

} // namespace kiln::sim
