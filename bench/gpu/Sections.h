// The sections of kiln_gpu_bench, each a function that measures, checks and
// adds its table and goals to the report.
#pragma once

#include "bench/gpu/BenchDevice.h"
#include "bench/gpu/BenchReport.h"
#include "compiler/Compile.h"

#include <string>
#include <string_view>

namespace kiln::bench {

struct BenchContext {
  BenchDevice gpu;
  /// target Cuda for this GPU's architecture, with the chosen backend.
  CompileOptions compileOptions;
  bool quick = false;
  /// --host-device: a stand-in in host memory, and kiln compiles for the CPU.
  bool hostDevice = false;
  /// Run only workloads whose name contains one of these comma-separated
  /// texts (empty: every workload).
  std::string filter;
  /// Section (a)'s best device-to-device copy bandwidth (read + write bytes
  /// per second) at its largest size: what memory-bound kernels are held to.
  double copyBytesPerSecond = 0;
  BenchReport report;

  bool selected(std::string_view workload) const {
    if (filter.empty())
      return true;
    std::string_view rest = filter;
    while (true) {
      size_t comma = rest.find(',');
      // An empty text ("a,,b", a trailing comma) selects nothing, not everything.
      std::string_view text = rest.substr(0, comma);
      if (!text.empty() && workload.find(text) != std::string_view::npos)
        return true;
      if (comma == std::string_view::npos)
        return false;
      rest.remove_prefix(comma + 1);
    }
  }
};

/// (a) Device::copyOnDevice timed with device events, 16 MiB to 1 GiB.
void benchCopyBandwidth(BenchContext &context);
/// (b) pointwise chains, softmax and layer_norm over rows, against (a).
void benchRowKernels(BenchContext &context);
/// (c) kiln's fp32 SIMT matmul against cuBLAS SGEMM.
void benchMatmul(BenchContext &context);
/// (d) time per kernel launch with and without launch graphs.
void benchLaunchOverhead(BenchContext &context);
/// (e) kiln's tensor-core GEMMs (bf16, f16, tf32) against cuBLAS GemmEx.
void benchTensorCoreMatmul(BenchContext &context);
/// (f) kiln's conv2d (fp32 NCHW, bf16 NHWC) against cuDNN on ResNet and VGG16 layers.
void benchConvVsCudnn(BenchContext &context);

} // namespace kiln::bench
