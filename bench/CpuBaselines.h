// The CPU benchmark's baselines, called in the same process as kiln, with the same threads,
// shapes and layouts (bench/README.md): OpenBLAS's SGEMM, oneDNN's matmul and convolution
// (in oneDNN's own best blocked layout, the reorders to and from it timed apart), and the
// machine's fp32 peak. Bench code only: nothing in kiln links these libraries.
#pragma once

#include "support/HostTensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kiln::bench {

/// Whether the output of an implementation's last run is right: "ok", or what is wrong.
using OutputCheck = std::function<std::string(const HostTensor &output)>;

/// The "info" record of the baselines: the CPU model and ISA, the fp32 peak measured with
/// `threads` threads, OpenBLAS's kernel and configuration, oneDNN's version (or which
/// library this build lacks), and whether OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set.
void printBaselineInfo(int threads);

/// c = a b, row-major, a m x k and b k x n (f32 tensors), timed with OpenBLAS's cblas_sgemm
/// (impl "openblas") and oneDNN's matmul primitive (impl "onednn"), each checked by `check`.
void benchMatmulBaselines(std::string_view workload, const HostTensor &a, const HostTensor &b,
                          double flops, const OutputCheck &check);

struct ConvProblem {
  int64_t batch, inChannels, outChannels, size, kernel, stride, pad;
  int64_t outSize() const { return (size + 2 * pad - kernel) / stride + 1; }
};

/// y = conv2d(x, w), NCHW / OIHW as kiln's, timed with oneDNN's convolution on the layouts it
/// picks for itself (impl "onednn"), and separately the reorders of x and w into them and of
/// y back to NCHW that a caller with NCHW tensors pays on every call (impl
/// "onednn_reorders").
void benchConvBaselines(std::string_view workload, const ConvProblem &problem,
                        const HostTensor &x, const HostTensor &w, double flops,
                        const OutputCheck &check);

} // namespace kiln::bench
