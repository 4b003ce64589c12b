// cuDNN 9, loaded with dlopen: its legacy convolution API is the benchmark's yardstick for
// kiln's conv2d. Only the benchmark uses it, so kiln itself never links cuDNN.
#pragma once

#include "bench/gpu/DeviceTimer.h"
#include "runtime/Device.h"
#include "support/DType.h"
#include "support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kiln::bench {

/// A conv2d as deep learning means it (cross-correlation), in cuDNN's terms.
struct CudnnConvShape {
  int images = 0, channels = 0, height = 0, width = 0; ///< x
  int filters = 0, kernelH = 0, kernelW = 0;           ///< w
  int padH = 0, padW = 0, strideH = 1, strideW = 1;
  int groups = 1;
  /// x, w and y in NHWC (w as [filters, kernelH, kernelW, channels / groups]), else NCHW
  /// (w as [filters, channels / groups, kernelH, kernelW]): kiln's two layouts.
  bool nhwc = false;
  /// Of x, w and y: f32 (computed with FMA math, no tf32) or bf16 (tensor-op math);
  /// cuDNN accumulates both in f32.
  DType dtype = DType::F32;

  int outHeight() const { return (height + 2 * padH - kernelH) / strideH + 1; }
  int outWidth() const { return (width + 2 * padW - kernelW) / strideW + 1; }
};

class Cudnn {
public:
  /// Loads cuDNN 9: $KILN_CUDNN (a library file or the folder holding one) when set, else
  /// libcudnn.so.9 and libcudnn.so on the loader's path, the CUDA toolkit's lib and lib64,
  /// then the nvidia-cudnn wheel of a Python install (.../site-packages/nvidia/cudnn/lib).
  /// Creates a handle bound to `stream`. NotFound when no library loads (the message lists
  /// every place tried); Unavailable when one loads but is not cuDNN 9 or cannot start.
  static Expected<std::unique_ptr<Cudnn>> open(runtime::Stream stream);
  ~Cudnn();
  Cudnn(const Cudnn &) = delete;
  Cudnn &operator=(const Cudnn &) = delete;

  /// The library file that was loaded.
  const std::string &libraryName() const { return libraryName_; }
  /// cudnnGetVersion(): "9.19.0".
  std::string version() const;

  class Convolution;
  /// Describes `shape` and picks the fastest forward algorithm by running every one
  /// (cudnnFindConvolutionForwardAlgorithmEx on x, w and y, whose contents it overwrites,
  /// with a workspace of up to 1 GiB from `device`); the chosen algorithm's workspace is
  /// allocated on `device` once.
  Expected<std::unique_ptr<Convolution>> planConvolution(runtime::Device &device,
                                                         const CudnnConvShape &shape,
                                                         runtime::DevicePtr x,
                                                         runtime::DevicePtr w,
                                                         runtime::DevicePtr y);

private:
  Cudnn() = default;
  struct Api;
  /// The status of a cuDNN call as an Error, with cuDNN's own description.
  Expected<void> check(int status, std::string_view what) const;
  std::unique_ptr<Api> api_;
  void *library_ = nullptr;
  void *handle_ = nullptr;
  std::string libraryName_;
};

/// A planned forward convolution: its descriptors, algorithm and workspace.
class Cudnn::Convolution {
public:
  ~Convolution();
  Convolution(const Convolution &) = delete;
  Convolution &operator=(const Convolution &) = delete;

  /// y = conv2d(x, w), enqueued on the handle's stream (cudnnConvolutionForward).
  Expected<void> forward(runtime::DevicePtr x, runtime::DevicePtr w, runtime::DevicePtr y);
  /// e.g. "IMPLICIT_PRECOMP_GEMM, tensor op math, 12 MiB workspace".
  std::string describe() const;
  /// FFT or Winograd: algorithms that transform the operands, so round more than a GEMM.
  bool transforms() const;

private:
  friend class Cudnn;
  explicit Convolution(Cudnn &cudnn) : cudnn_(&cudnn) {}
  Cudnn *cudnn_;
  void *x_ = nullptr, *w_ = nullptr, *y_ = nullptr, *convolution_ = nullptr;
  int algorithm_ = 0, mathType_ = 0;
  int64_t workspaceBytes_ = 0;
  std::optional<DeviceBuffer> workspace_;
};

} // namespace kiln::bench
