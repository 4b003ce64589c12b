// openBenchDevice for builds without kiln's CUDA device layer: there is no GPU
// to open, and the error says so.
#include "bench/gpu/BenchDevice.h"

namespace kiln::bench {

Expected<BenchDevice> openBenchDevice(int) {
  return makeError(ErrorCode::Unavailable,
                   "this kiln was built without the CUDA device layer (runtime/cuda), so it "
                   "cannot open a GPU");
}

} // namespace kiln::bench
