// One conv2d (+ per-channel bias, + relu) computed by cuDNN on a GPU, as a
// DeviceKernel: the tuner's "cudnn" candidate for a conv2d fusion group. The
// problem is plain data; cuDNN's descriptors and handles stay in the .cpp.
#pragma once

#include "runtime/Device.h"
#include "support/DType.h"
#include "support/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kiln::runtime::cuda {
class CudaDevice;
}

namespace kiln::runtime::cudnn {

struct CudnnLibrary;
struct CudnnConvDescriptors;

enum class ConvLayout { Nchw, Nhwc };

/// Where each tensor sits in the kernel's argument list (DeviceKernel::launch's
/// args): a group's lowered kernel takes its inputs in FusionGroup::inputs
/// order, then the output, and so does this one. x and w may be the same
/// argument (a group input is passed once).
struct Conv2DArguments {
  int x = 0;
  int w = 1;
  int bias = -1; ///< -1: no bias
  int output = 2;
  int count = 3; ///< how many arguments launch() reads
};

/// One convolution, exactly as kiln's conv2d defines it: cross-correlation,
/// x [N,C,H,W] (nhwc: [N,H,W,C]), w [K,C/groups,R,S] (nhwc: [K,R,S,C/groups]),
/// y [N,K,P,Q] (nhwc: [N,P,Q,K]), then y += bias[k], then y = max(y, 0)
/// (NaN propagated). Every tensor has `dtype`; products accumulate in f32
/// (f64 for f64 tensors).
struct Conv2DProblem {
  DType dtype = DType::F32; ///< f32, f16, bf16 or f64
  bool allowTf32 = false;   ///< f32 only: tensor cores with tf32 inputs
  ConvLayout layout = ConvLayout::Nchw;
  int64_t batch = 1, inChannels = 1, height = 1, width = 1;
  int64_t outChannels = 1, kernelH = 1, kernelW = 1;
  int64_t outHeight = 1, outWidth = 1;
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0}; ///< [h, w], the same before and after
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  bool bias = false;
  bool relu = false;
  Conv2DArguments args;

  /// "conv2d nchw f16 x[2,3,9,9] w[4,3,3,3] stride=[1,1] pad=[1,1] dilation=[1,1]
  /// groups=1 +bias +relu" (one line).
  std::string str() const;
};

/// How the kernel picks cuDNN's algorithm.
enum class CudnnSelection {
  Measured,  ///< cudnnFindConvolutionForwardAlgorithmEx times each algorithm on this GPU
  Heuristic, ///< cudnnGetConvolutionForwardAlgorithm_v7's first choice, nothing run
};

/// What a kernel was built with: its configuration text (configText()) parses
/// back into one, so a tuning record replays the same algorithm.
struct CudnnConvChoice {
  int algorithm = 0;          ///< cudnnConvolutionFwdAlgo_t
  int mathType = 0;           ///< cudnnMathType_t
  bool fusedEpilogue = false; ///< bias+relu through cudnnConvolutionBiasActivationForward
};

struct CudnnConvOptions {
  CudnnSelection selection = CudnnSelection::Measured;
  /// The most device memory one algorithm may use as workspace (per stream).
  int64_t workspaceLimitBytes = int64_t{256} << 20;
  /// FFT algorithms round far more than a direct sum; they are left out
  /// unless asked for (the tuner's reference check would often reject them).
  bool allowFft = false;
  /// Use exactly this choice (a tuning record's), measuring nothing.
  std::optional<CudnnConvChoice> fixed;
  std::string name = "cudnn_conv2d"; ///< the kernel's name in profiles and errors
};

/// Whether the choice's algorithm transforms the operands (FFT, Winograd), so rounds more
/// than a direct sum: checks against a reference allow it more.
bool transformsOperands(const CudnnConvChoice &choice);

/// The text of a choice: "algo=implicit_precomp_gemm math=tensor_op epilogue=fused".
std::string cudnnChoiceText(const CudnnConvChoice &choice);
/// Parses the first three fields of a configText() (workspace=... and the
/// rest are ignored). InvalidArgument naming the bad field.
Expected<CudnnConvChoice> parseCudnnChoice(const std::string &text);

/// The output shape cuDNN computes for `problem` ([N,K,P,Q], nhwc [N,P,Q,K])
/// through the same descriptors the kernel uses. Host only: needs cuDNN, no GPU.
Expected<std::array<int64_t, 4>> cudnnConv2DOutputShape(const Conv2DProblem &problem);

/// The kernel. launch() enqueues on the given stream through a cuDNN handle
/// and workspace of that stream's own (created on the stream's first launch,
/// or by prepare()), so runs on different streams never share either.
class CudnnConv2D final : public DeviceKernel {
public:
  /// Describes the problem to cuDNN, picks the algorithm (see
  /// CudnnConvOptions), and runs it once on scratch buffers so an unsupported
  /// combination fails here rather than at the first launch. Unavailable
  /// without cuDNN; Unsupported for what cuDNN cannot compute; OutOfMemory.
  static Expected<std::shared_ptr<CudnnConv2D>> create(const Conv2DProblem &problem,
                                                       cuda::CudaDevice &device,
                                                       const CudnnConvOptions &options = {});
  ~CudnnConv2D() override;
  CudnnConv2D(const CudnnConv2D &) = delete;
  CudnnConv2D &operator=(const CudnnConv2D &) = delete;

  const std::string &name() const override { return name_; }
  /// args[problem.args.x] etc.: device addresses of the tensors.
  Expected<void> launch(const DevicePtr *args, Stream stream) const override;

  /// Creates `stream`'s handle and workspace now. Call it before capturing
  /// launches on a stream into a launch graph: allocating during a capture fails.
  Expected<void> prepare(Stream stream) const override;

  /// "algo=implicit_precomp_gemm math=tensor_op epilogue=fused workspace=1048576":
  /// the tuning record's schedule text (deterministic for a given choice).
  const std::string &configText() const { return configText_; }
  const CudnnConvChoice &choice() const { return choice_; }
  int64_t workspaceBytes() const { return workspaceBytes_; }
  const Conv2DProblem &problem() const { return problem_; }

private:
  struct StreamState;
  CudnnConv2D(std::shared_ptr<cuda::CudaDevice> device, const CudnnLibrary &library,
              const Conv2DProblem &problem, std::string name);
  Expected<StreamState *> stateFor(Stream stream) const;
  Expected<void> enqueue(const StreamState &state, const DevicePtr *args) const;

  std::shared_ptr<cuda::CudaDevice> device_;
  const CudnnLibrary &library_;
  Conv2DProblem problem_;
  std::string name_;
  std::unique_ptr<CudnnConvDescriptors> descriptors_;
  CudnnConvChoice choice_;
  int64_t workspaceBytes_ = 0;
  std::string configText_;
  mutable std::mutex streamsMutex_;
  mutable std::map<void *, std::unique_ptr<StreamState>> streams_;
};

} // namespace kiln::runtime::cudnn
