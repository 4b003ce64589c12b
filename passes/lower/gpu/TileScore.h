// How good a GEMM block tile is, without running anything: shared by the CUDA-core and the
// tensor-core schedule heuristics.
#pragma once

#include "passes/lower/LowerUtil.h"

#include <algorithm>
#include <cstdint>

namespace kiln::lower::tile_score {

/// The fraction of a padded extent that is real work.
inline double usefulFraction(int64_t extent, int64_t tile) {
  if (extent <= 0)
    return 1.0;
  return double(extent) / double(ceilDiv(extent, tile) * tile);
}

/// The fraction of the SMs' slots the last wave fills on average over all waves.
inline double waveEfficiency(int64_t blocks, int64_t numSms) {
  int64_t waves = ceilDiv(std::max<int64_t>(blocks, 1), numSms);
  return double(blocks) / double(waves * numSms);
}

/// Operand reuse of a block tile: multiply-adds per element loaded into shared memory,
/// relative to a 128 x 128 tile.
inline double reuse(int64_t blockM, int64_t blockN) {
  return double(blockM * blockN) / double(blockM + blockN) / 64.0;
}

} // namespace kiln::lower::tile_score
